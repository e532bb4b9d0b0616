// Package status turns what the daemon knows about itself into the
// technician's report: OK/WARN/CRIT checks with hints, Nagios exit codes,
// the JSON of `posedge status --json` and its one-screen text form.
package status
