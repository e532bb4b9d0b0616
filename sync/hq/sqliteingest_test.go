package hq_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
)

// TestSQLitePlainInsert: a chunk of transactions new to the database
// goes in with one plain insert; a chunk holding a key already stored,
// or one repeated in the batch, takes the insert with RETURNING, and
// every outcome and count is the same either way (TestStore checks the
// outcomes on both paths; this test that the plain one is taken).
func TestSQLitePlainInsert(t *testing.T) {
	s := openStore(t, "sqlite://"+filepath.Join(t.TempDir(), "hq.db"), hqdb.StoreOptions{})
	sales := func(from, to int) []hqdb.Msg {
		var out []hqdb.Msg
		for f := from; f <= to; f++ {
			out = append(out, sale{store: "S001", flow: fmt.Sprint(f), cents: int64(f), terminal: fmt.Sprintf("T%02d", f%3)}.msg(t, t0))
		}
		return out
	}
	all := func(n int, o hqdb.Outcome) []hqdb.Outcome {
		out := make([]hqdb.Outcome, n)
		for i := range out {
			out[i] = o
		}
		return out
	}
	steps := []struct {
		name     string
		msgs     []hqdb.Msg
		want     []hqdb.Outcome
		returned int64 // chunks inserted with RETURNING so far
	}{
		// 200 rows: chunks of 128, 64 and 8, all plain.
		{"new sales", sales(1, 200), all(200, hqdb.Inserted), 0},
		// 128 new and one redelivered: the 128 plain, the 1 with RETURNING.
		{"a redelivery after new sales", append(sales(201, 328), sales(5, 5)...), append(all(128, hqdb.Inserted), hqdb.Duplicate), 1},
		// The redelivery shares a chunk with new sales: rolled back and
		// inserted with RETURNING, the new ones still counted.
		{"new sales and a redelivery in one chunk", append(sales(329, 330), sales(7, 7)...), []hqdb.Outcome{hqdb.Inserted, hqdb.Inserted, hqdb.Duplicate}, 2},
		{"a key repeated in the batch", append(sales(331, 331), sales(331, 331)...), []hqdb.Outcome{hqdb.Inserted, hqdb.Duplicate}, 3},
	}
	for _, st := range steps {
		wantOutcomes(t, insert(t, s, st.msgs...), st.want...)
		if got := hq.ReturnedChunks(s); got != st.returned {
			t.Fatalf("%s: %d chunks inserted with RETURNING so far, want %d", st.name, got, st.returned)
		}
	}
	if w := watermark(t, s, "S001"); w.Count != 331 || w.MaxFlowNo != "331" || !w.LastReceivedAt.Equal(t0) {
		t.Fatalf("watermark = %+v, want 331 rows up to flow 331", w)
	}
}
