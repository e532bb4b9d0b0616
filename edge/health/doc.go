// Package health is the daemon's health snapshot: subsystems report what
// they observe into a Tracker; /readyz, /admin/v1/status and `posedge status` read it.
package health
