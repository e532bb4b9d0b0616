package ledger

// HealthReporter is told of each change of the ledger's mode as it
// happens (edge/health.Tracker): a Redis call that fails on the request
// path switches the store to degraded mode, and status must say so from
// the next read on, not from the next poll.
type HealthReporter interface {
	LedgerMode(degraded bool)
}
