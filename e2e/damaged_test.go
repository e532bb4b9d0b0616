package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/testenv"
)

// posedgeCmd runs the posedge binary with args and returns its combined
// output and exit code (a run that does not end within d fails the test).
func posedgeCmd(t *testing.T, d time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	out, err := exec.CommandContext(ctx, filepath.Join(bin, "posedge"), args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("posedge %s still running after %v:\n%s", strings.Join(args, " "), d, out)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("posedge %s: %v", strings.Join(args, " "), err)
	}
	return string(out), 0
}

// TestDamagedJournalRefusedThenSalvaged: pages of a real journal (the
// daemon stopped cleanly, so every row is in the main file) are
// overwritten as a failing disk would. posedge starts on it and serves
// at once; the quick_check it runs behind the tills finds the damage:
// sales are answered 503 journal_unavailable, /readyz fails, one ERROR
// line names the damage; `posedge status` says CRIT with the salvage
// advice, while posedge runs and once it is stopped; `posedge journal
// verify` exits 65.
// `posedge journal salvage` copies every readable transaction into a new
// journal and keeps the damaged file; posedge serves again on it, every
// salvaged transaction answers as before, and new sales and a refund of
// a salvaged sale are taken. The journal is made by four tills selling
// the realistic mix (multi-line and token sales, refunds, batches).
func TestDamagedJournalRefusedThenSalvaged(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: looseMix})
	putMixItems(s)
	told, mt := mixUntil(t, s, 4, "dmg", testSeed(t), 400)
	t.Log(mt.summary())
	bodies := map[string][]byte{}
	refunded := map[string]bool{}
	for _, tx := range told {
		r := s.T(s.Terminals[0], "GET", "/v1/sales/"+tx.FlowNo, nil, nil)
		if r.Status != 200 {
			t.Fatalf("GET %s %s: %d %s", tx.Kind, tx.FlowNo, r.Status, r.Body)
		}
		bodies[tx.FlowNo] = r.Body
		refunded[tx.OriginalFlowNo] = true
	}
	if err := s.Edge.Terminate(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(s.Dir, "journal.db")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096
	hit := 0
	for off := page; off+page <= len(b); off += page {
		if bytes.Contains(b[off:off+page], []byte(`"store_id":"`+s.StoreID)) {
			if hit%4 == 2 {
				copy(b[off:off+64], bytes.Repeat([]byte{0xA5}, 64))
			}
			hit++
		}
	}
	if hit < 8 {
		t.Fatalf("only %d pages hold sales", hit)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}

	// The damage is in the tables' leaves: posedge opens the file and
	// serves at once; the quick_check it runs right after start finds
	// the damage. From then on sales are refused 503 journal_unavailable,
	// status says CRIT with the salvage advice, /readyz fails, one ERROR
	// line names the file and what quick_check said.
	s.Edge.Start(t)
	advises := func(st statusJSON) bool {
		for _, c := range st.Checks {
			if c.Name == "journal" && c.Status == "crit" && strings.Contains(c.Hint, "posedge journal salvage") {
				return true
			}
		}
		return false
	}
	// The daemon's own /readyz, not only the status screen: `posedge
	// status` reads the journal itself when the daemon does not answer
	// yet, so it can say CRIT before the daemon's check has run (a sale
	// then met a listener not up yet, or was taken).
	testenv.WaitFor(t, 60*time.Second, "the background quick_check finds the damage", func() bool {
		if !s.Edge.Running() {
			t.Fatalf("posedge exited on a journal damaged in its leaves:\n%s", s.Edge.Tail(3000))
		}
		if r := s.Admin("GET", "/readyz", nil); r.Status != 503 || !strings.Contains(string(r.Body), "damaged") {
			return false
		}
		st, _, _ := posedgeStatus(t, s)
		return st.Status == "crit" && advises(st)
	})
	if r := s.Sale(s.Terminals[0], "after-damage", "MX1", 1, 100); r.Status != 503 || r.Code() != "journal_unavailable" {
		t.Fatalf("a sale on a journal found damaged: %d %s (%v), want 503 journal_unavailable", r.Status, r.Body, r.Err)
	}
	if r := s.Admin("GET", "/readyz", nil); r.Status != 503 || !strings.Contains(string(r.Body), "damaged") {
		t.Fatalf("readyz on a journal found damaged: %d %s", r.Status, r.Body)
	}
	if err := s.Edge.Terminate(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	if out := s.Edge.Tail(1 << 20); strings.Count(out, "journal damaged: refusing sales") != 1 || !strings.Contains(out, path) {
		t.Fatalf("want one ERROR line naming the damage and %s:\n%s", path, out)
	}
	st, code, sout := posedgeStatus(t, s)
	advised := false
	for _, c := range st.Checks {
		advised = advised || (c.Name == "journal" && c.Status == "crit" && strings.Contains(c.Hint, "posedge journal salvage"))
	}
	if code != 2 || st.Status != "crit" || !advised {
		t.Fatalf("status on a damaged journal: exit %d\n%s", code, sout)
	}
	if out, code := posedgeCmd(t, 60*time.Second, "journal", "verify", "--config", s.Config); code != 65 {
		t.Fatalf("journal verify on a damaged journal: exit %d\n%s", code, out)
	}

	out, code := posedgeCmd(t, 120*time.Second, "journal", "salvage", "--config", s.Config)
	if code != 0 {
		t.Fatalf("journal salvage: exit %d\n%s", code, out)
	}
	t.Logf("salvage:\n%s", out)
	kept, _ := filepath.Glob(path + ".damaged-*[0-9]Z") // not its -wal, -shm
	if len(kept) != 1 {
		t.Fatalf("damaged file kept as %v, want one", kept)
	}
	if k, _ := os.ReadFile(kept[0]); !bytes.Equal(k, b) {
		t.Fatal("the kept damaged file is not the damaged journal")
	}
	if out, code := posedgeCmd(t, 60*time.Second, "journal", "verify", "--config", s.Config); code != 0 {
		t.Fatalf("journal verify after salvage: exit %d\n%s", code, out)
	}

	s.StartEdge()
	salvaged := s.JournalRows("")
	if salvaged == 0 || salvaged >= len(told) {
		t.Fatalf("%d of %d transactions salvaged: the damage did not take, or nothing was saved", salvaged, len(told))
	}
	jr := journalTxns(t, path)
	for f := range jr {
		if bodies[f] == nil {
			t.Fatalf("the salvaged journal holds %s, which no till was told of", f)
		}
	}
	var unrefunded *mixTxn // a salvaged sale no till refunded
	for i, tx := range told {
		if jr[tx.FlowNo] == 0 {
			continue
		}
		r := s.T(s.Terminals[0], "GET", "/v1/sales/"+tx.FlowNo, nil, nil)
		if r.Status != 200 || !bytes.Equal(r.Body, bodies[tx.FlowNo]) {
			t.Fatalf("salvaged %s %s answers %d %s, was %s", tx.Kind, tx.FlowNo, r.Status, r.Body, bodies[tx.FlowNo])
		}
		if unrefunded == nil && tx.Kind == "sale" && !refunded[tx.FlowNo] {
			unrefunded = &told[i]
		}
	}
	if r := s.Sale(s.Terminals[1], "after-salvage", "MX1", 1, 100); r.Status != 201 {
		t.Fatalf("a sale after salvage: %d %s", r.Status, r.Body)
	}
	if unrefunded == nil {
		t.Fatal("no salvaged sale left to refund")
	}
	m := &mixTill{t: t, s: s, term: s.Terminals[2], mt: &mixTills{count: map[string]int{}}}
	if !m.refundOf("after-salvage-refund", *unrefunded) {
		t.FailNow()
	}
	t.Logf("%d of %d transactions salvaged; a refund of salvaged sale %s taken", salvaged, len(told), unrefunded.FlowNo)
}
