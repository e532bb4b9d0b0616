// Package status turns the daemon's health facts (edge/health) into the
// technician's report, in three parts: facts.go is what is judged (the
// facts and the thresholds of a config), evaluate.go the judging (one
// check function per subsystem, each giving a typed Level; a fact gone
// stale is UNKNOWN, never OK), report.go and render.go what is shown —
// the JSON of `posedge status --json` and /admin/v1/status, its
// one-screen text form with each fact's age, and the Nagios exit codes.
package status
