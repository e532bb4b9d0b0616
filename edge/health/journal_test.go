package health

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/posedge/posedge/offline/journal"
)

// ReadJournal fills the last sync from the journal's last ack only when
// the replayer does not know it (the daemon down, or no sync since its
// start), and otherwise leaves the replayer's time: the journal's figure
// costs a read of every acknowledged row.
func TestReadJournalLastSync(t *testing.T) {
	ctx := context.Background()
	acked := t0.Add(-time.Hour)
	j, err := journal.Open(ctx, filepath.Join(t.TempDir(), "journal.db"), journal.Options{Now: func() time.Time { return acked }})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, flow := range []string{"1000000000000001", "1000000000000002"} {
		if err := j.Append(ctx, journal.Txn{FlowNo: flow, TerminalID: "T01", IdemKey: flow, Fingerprint: "fp", Kind: "sale",
			Tender: "cash", TotalCents: 100, BusinessDay: "20261130", BusinessHour: "13", CreatedAt: acked,
			Lines: []journal.Line{{Barcode: "A", Qty: 1, PriceCents: 100}}, Body: []byte(`{}`), Applied: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.MarkAcked(ctx, "1000000000000001"); err != nil {
		t.Fatal(err)
	}
	replayer := t0
	for _, c := range []struct {
		name string
		in   *time.Time
		want time.Time
	}{
		{"replayer knows it", &replayer, t0},
		{"from the journal", nil, acked},
	} {
		t.Run(c.name, func(t *testing.T) {
			jf, hq := ReadJournal(ctx, j, HQ{LastSyncAt: c.in})
			if jf.Error != "" {
				t.Fatalf("journal error: %s", jf.Error)
			}
			if got := at(hq.LastSyncAt); !got.Equal(c.want) {
				t.Errorf("last sync = %v, want %v", got, c.want)
			}
			if jf.Rows != 2 || hq.Backlog != 1 || hq.Unconfirmed != 1 {
				t.Errorf("rows %d, backlog %d, unconfirmed %d; want 2, 1, 1", jf.Rows, hq.Backlog, hq.Unconfirmed)
			}
		})
	}
}
