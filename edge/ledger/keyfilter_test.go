package ledger_test

import (
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
)

// A sale skips the journal's look-up of its key when the journal's key
// filter says it cannot hold it (issue 26). A retry whose record Redis no
// longer has (its TTL ran out, or Redis lost it) must still be answered
// from the journal by a daemon started since (the filter rebuilt from the
// file): the same sale replayed, nothing counted again, no flow number
// spent on a sale taken back.
func TestRetryRedisForgotIsAnsweredFromTheJournal(t *testing.T) {
	e := newEnv(t, journal.Options{})
	e.putItem("A", 150, 10)
	first := e.mustSale("T01", "k1", sale1("A", 2, 150))
	e.waitCompleted("T01:k1")
	names, err := e.rdb.Keys(e.ctx, "*idem:T01:k1").Result()
	if err != nil || len(names) != 1 {
		t.Fatalf("record of k1: %v %v", names, err)
	}
	if err := e.rdb.Del(e.ctx, names[0]).Err(); err != nil { // its TTL ran out
		t.Fatal(err)
	}

	e.restart(journal.Options{})
	// The filter is built in the background; once it says no to a key
	// never journaled it is in use.
	testenv.WaitFor(t, 5*time.Second, "journal key filter built", func() bool {
		return !e.j.MayHoldKey("T01", "never-journaled")
	})
	seqs, _ := e.rdb.Keys(e.ctx, "*:seq").Result()
	if len(seqs) != 1 {
		t.Fatalf("sequence keys %v", seqs)
	}
	seq := e.rdb.Get(e.ctx, seqs[0]).Val()

	r, err := e.sale("T01", "k1", sale1("A", 2, 150))
	if err != nil || !r.Replayed || r.FlowNo != first.FlowNo || string(r.Body) != string(first.Body) {
		t.Fatalf("retry of a journaled key Redis forgot: %+v %v; want the replay of %s", r, err, first.FlowNo)
	}
	if got := e.stock("A"); got != 8 {
		t.Fatalf("stock %d after the retry, want 8: the sale was counted again", got)
	}
	if got := e.rdb.Get(e.ctx, seqs[0]).Val(); got != seq {
		t.Fatalf("flow sequence %s → %s: the retry ran the sale script (a flow number spent and taken back)", seq, got)
	}
	if _, err := e.sale("T01", "k1", sale1("A", 3, 150)); refusal(t, err).Code != "idempotency_key_reused" {
		t.Fatalf("same key, other body: %v", err)
	}
	if s := e.mustSale("T01", "k2", sale1("A", 1, 150)); s.Replayed || s.FlowNo <= first.FlowNo {
		t.Fatalf("a fresh key after the restart: %+v", s)
	}
}
