package hq

import (
	dto "github.com/prometheus/client_model/go"

	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/hqdb/postgres"
	"github.com/posedge/posedge/sync/hqdb/sqlite"
)

// SameJSON exposes sameBody to the tests.
var SameJSON = hqdb.SameBody

// CarefulBatches is how many batches a PostgreSQL store could not
// store in one round trip.
func CarefulBatches(s hqdb.Store) int64 { return s.(*postgres.Store).CarefulBatches() }

// StoredKeyBatches is how many batches a PostgreSQL store sent again
// with ON CONFLICT after their plain insert met a stored key.
func StoredKeyBatches(s hqdb.Store) int64 { return s.(*postgres.Store).StoredKeyBatches() }

// ReturnedChunks is how many chunks of transactions a SQLite store
// inserted with RETURNING rather than in one plain insert.
func ReturnedChunks(s hqdb.Store) int64 { return s.(*sqlite.Store).ReturnedChunks() }

// CommitStats is how many batches m saw committed and the seconds their
// InsertBatch calls took in all (posedge_hq_batch_commit_seconds).
func CommitStats(m *Metrics) (batches uint64, seconds float64) {
	var d dto.Metric
	if m.commit.Write(&d) != nil || d.Histogram == nil {
		return 0, 0
	}
	return d.Histogram.GetSampleCount(), d.Histogram.GetSampleSum()
}
