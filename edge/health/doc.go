// Package health is the daemon's registry of health facts, in the manner
// of Tailscale's health package: each subsystem owns one fact type and
// reports it when its state changes (the ledger the moment a Redis call
// sends it to degraded mode, the replay each publish and ack, the prober
// what Redis and the journal answered), each fact stamped with the time
// it was seen. /readyz, /admin/v1/status and `posedge status` read the
// facts; edge/status judges and renders them. ReadJournal and ReadCatalog
// gather what the journal file says, for the daemon and for a status
// command whose daemon is down alike.
package health
