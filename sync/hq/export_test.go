package hq

import (
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/hqdb/postgres"
)

// SameJSON exposes sameBody to the tests.
var SameJSON = hqdb.SameBody

// CarefulBatches is how many batches a PostgreSQL store could not
// store in one round trip.
func CarefulBatches(s hqdb.Store) int64 { return s.(*postgres.Store).CarefulBatches() }
