// Package parseguard runs a dependency's decoder of outside input (a
// config file, a price list, a message) so that a panic inside it becomes
// a named error — the file, the line where the decoder gave up, "the
// parser crashed" — instead of crashing the daemon. A panic in a decoder
// is the dependency's bug (goccy/go-yaml v1.19.2 dereferences nil on
// "terminals:\n !"); the operator still needs to know which line of which
// file to fix, and a service must not restart in a loop on it.
package parseguard
