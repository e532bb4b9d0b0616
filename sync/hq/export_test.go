package hq

// SameJSON exposes sameBody to the tests.
var SameJSON = sameBody

// CarefulBatches is how many batches a PostgreSQL store could not
// store in one round trip.
func CarefulBatches(s Store) int64 { return s.(*PostgresStore).careful.Load() }
