package journal

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func TestPruneKeepsUnackedAndRemembersSeq(t *testing.T) {
	ctx := context.Background()
	j := openTemp(t, Options{})
	for i := 1; i <= 1200; i++ {
		if err := j.Append(ctx, sale(i)); err != nil {
			t.Fatal(err)
		}
	}
	var acked []string
	for i := 1; i <= 1100; i++ {
		acked = append(acked, sale(i).FlowNo)
	}
	if err := j.MarkAcked(ctx, acked...); err != nil {
		t.Fatal(err)
	}
	// HQ confirmed storing rows 1..1000; 1001..1100 only have
	// JetStream's ack: kept.
	if n, err := j.MarkConfirmed(ctx, acked[:1000]...); err != nil || n != 1000 {
		t.Fatalf("confirmed %d (%v)", n, err)
	}
	// Row 7 is confirmed but its effects never reached Redis: kept.
	if _, err := j.r.Exec(`UPDATE txns SET applied = 0 WHERE seq = 7`); err != nil {
		t.Fatal(err)
	}
	if n, err := j.Prune(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("prune of nothing old enough: %d %v", n, err)
	}
	n, err := j.Prune(ctx, time.Now().Add(time.Second))
	if err != nil || n != 999 {
		t.Fatalf("pruned %d (%v), want 999 in batches", n, err)
	}
	st, _ := j.Stats(ctx)
	if st.Rows != 201 || st.Backlog != 100 || st.Unconfirmed != 100 {
		t.Fatalf("after prune: %+v", st)
	}
	for _, i := range []int{7, 1001, 1100, 1101} {
		if row, err := j.ByFlow(ctx, sale(i).FlowNo); err != nil || row == nil {
			t.Errorf("row %d pruned (%v)", i, err)
		}
	}
	if m, _ := j.MetaInt(ctx, MetaPrunedMaxSeq); m != 1000 {
		t.Fatalf("pruned max seq %d", m)
	}
	var lines int
	_ = j.r.QueryRow(`SELECT COUNT(*) FROM txn_lines`).Scan(&lines)
	if lines != 201 {
		t.Fatalf("%d lines left: the cascade did not follow", lines)
	}
}

func TestExpectedAndSequenceQueries(t *testing.T) {
	ctx := context.Background()
	j := openTemp(t, Options{})
	if err := j.PutItem(ctx, Item{Barcode: "A", Name: "a", PriceCents: 199, Stock: 100, UpdatedAt: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 2, 3, 5, 6, 9} {
		if err := j.Append(ctx, sale(i)); err != nil {
			t.Fatal(err)
		}
	}
	deg := sale(100)
	deg.FlowNo, deg.Seq, deg.IdemKey, deg.Mode, deg.Applied = "2000000000000001", 0, "deg", ModeDegraded, false
	if err := j.Append(ctx, deg); err != nil {
		t.Fatal(err)
	}
	rows, _ := j.DayTotalsUpTo(ctx, "20261130", 5)
	if len(rows) != 1 || rows[0].Totals.Sales != 4 || rows[0].Totals.SalesCents != 4*199 {
		t.Fatalf("totals up to seq 5 (degraded unapplied left out): %+v", rows)
	}
	if d, _ := j.UnappliedDays(ctx); !d["20261130"] || len(d) != 1 {
		t.Fatalf("unapplied days %v", d)
	}
	if m, _ := j.MissingSeqs(ctx, 0, 9); m != 3 {
		t.Fatalf("missing in (0,9]: %d", m)
	}
	if g, _ := j.SeqGaps(ctx, 1, 9); len(g) != 2 || g[0] != (SeqGap{4, 4}) || g[1] != (SeqGap{7, 8}) {
		t.Fatalf("gaps %v", g)
	}
	if err := j.MarkApplied(ctx, deg.FlowNo); err != nil {
		t.Fatal(err)
	}
	items, err := j.ExpectedStock(ctx, 6)
	if err != nil || len(items) != 1 || items[0].Expected != 100-6 || items[0].Moves != 6 {
		t.Fatalf("expected stock up to seq 6 with the degraded sale applied: %+v %v", items, err)
	}
	// What the reconciliation relies on: expected at 2 = expected at 6 +
	// the moves of (2, 6] (sales 3, 5, 6; the degraded one, seq 0, in both).
	moves, err := j.StockMovesBetween(ctx, 2, 6)
	at2, err2 := j.ExpectedStock(ctx, 2)
	if err != nil || err2 != nil || moves["A"] != 3 || len(moves) != 1 || at2[0].Expected != items[0].Expected+moves["A"] {
		t.Fatalf("moves in (2, 6] %v (%v), expected at 2 %+v (%v), at 6 %d", moves, err, at2, err2, items[0].Expected)
	}
	if d, _ := j.FirstBusinessDay(ctx); d != "20261130" {
		t.Fatalf("first day %q", d)
	}
	if err := j.SetMeta(ctx, "k", "1"); err != nil {
		t.Fatal(err)
	}
	if err := j.SetMeta(ctx, "k", "2"); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := j.Meta(ctx, "k"); !ok || v != "2" {
		t.Fatalf("meta %q %v", v, ok)
	}
}

// Issue 22.3: after pruning every degraded row of a node, the highest
// degraded number (and the highest Redis sequence) must still be known,
// or the next degraded sale reuses a number HQ already holds.
func TestPruneKeepsFlowHighWaterMarks(t *testing.T) {
	ctx := context.Background()
	j := openTemp(t, Options{})
	var flows []string
	for i := 1; i <= 3; i++ {
		deg := sale(i)
		deg.FlowNo, deg.Seq, deg.IdemKey, deg.Mode = fmt.Sprintf("23%014d", i), 0, fmt.Sprintf("deg%d", i), ModeDegraded
		flows = append(flows, deg.FlowNo)
		if err := j.Append(ctx, deg); err != nil {
			t.Fatal(err)
		}
	}
	other := sale(9) // another node's degraded number: its own mark
	other.FlowNo, other.Seq, other.IdemKey, other.Mode = "24"+fmt.Sprintf("%014d", 7), 0, "other", ModeDegraded
	for _, tx := range []Txn{sale(41), sale(42), other} {
		if err := j.Append(ctx, tx); err != nil {
			t.Fatal(err)
		}
		flows = append(flows, tx.FlowNo)
	}
	if err := j.MarkAcked(ctx, flows...); err != nil {
		t.Fatal(err)
	}
	if _, err := j.MarkConfirmed(ctx, flows...); err != nil {
		t.Fatal(err)
	}
	if n, err := j.Prune(ctx, time.Now().Add(time.Second)); err != nil || n != 6 {
		t.Fatalf("pruned %d (%v), want all 6", n, err)
	}
	for _, c := range []struct{ prefix, want string }{
		{"23", "2300000000000003"}, {"24", "2400000000000007"}, {"25", ""},
	} {
		if got, err := j.MaxFlowWithPrefix(ctx, c.prefix); err != nil || got != c.want {
			t.Errorf("max flow %s after prune: %q (%v), want %q", c.prefix, got, err, c.want)
		}
	}
	if got, err := j.MaxSeq(ctx); err != nil || got != 42 {
		t.Errorf("max seq after prune: %d (%v), want 42", got, err)
	}
	// A later prune of lower numbers never lowers the mark.
	low := sale(1)
	low.FlowNo, low.Seq, low.IdemKey, low.Mode = "2300000000000001", 0, "low", ModeDegraded
	if err := j.Append(ctx, low); err != nil {
		t.Fatal(err)
	}
	_ = j.MarkAcked(ctx, low.FlowNo)
	_, _ = j.MarkConfirmed(ctx, low.FlowNo)
	if _, err := j.Prune(ctx, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, _ := j.MaxFlowWithPrefix(ctx, "23"); got != "2300000000000003" {
		t.Errorf("mark lowered by a later prune: %q", got)
	}
}
