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
// overwritten as a failing disk would. posedge then refuses to serve: it
// exits at once with code 65 (the unit's RestartPreventExitStatus) and one
// log line naming the damage and the salvage command; `posedge status`
// says CRIT with that advice; `posedge journal verify` exits 65.
// `posedge journal salvage` copies every readable transaction into a new
// journal and keeps the damaged file; posedge serves again on it, every
// salvaged sale answers as before, and new sales are taken.
func TestDamagedJournalRefusedThenSalvaged(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: looseMix})
	s.PutItem("D1", 120, plenty)
	flows := sellN(t, s, "dmg", "D1", 400, 120)
	bodies := map[string][]byte{}
	for _, f := range flows {
		r := s.T(s.Terminals[0], "GET", "/v1/sales/"+f, nil, nil)
		if r.Status != 200 {
			t.Fatalf("GET sale %s: %d %s", f, r.Status, r.Body)
		}
		bodies[f] = r.Body
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

	out, code := posedgeCmd(t, 30*time.Second, "run", "--config", s.Config)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if code != 65 || !strings.Contains(last, "journal damaged") || !strings.Contains(last, "posedge journal salvage") {
		t.Fatalf("posedge run on a damaged journal: exit %d, want 65 and one line saying so:\n%s", code, out)
	}
	if n := strings.Count(out, "journal damaged"); n != 1 {
		t.Fatalf("%d lines name the damage, want one:\n%s", n, out)
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

	out, code = posedgeCmd(t, 120*time.Second, "journal", "salvage", "--config", s.Config)
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
	if salvaged == 0 || salvaged >= len(flows) {
		t.Fatalf("%d of %d sales salvaged: the damage did not take, or nothing was saved", salvaged, len(flows))
	}
	jr := journalTxns(t, path)
	for f, body := range bodies {
		if jr[f] == 0 {
			continue
		}
		r := s.T(s.Terminals[0], "GET", "/v1/sales/"+f, nil, nil)
		if r.Status != 200 || !bytes.Equal(r.Body, body) {
			t.Fatalf("salvaged sale %s answers %d %s, was %s", f, r.Status, r.Body, body)
		}
	}
	if r := s.Sale(s.Terminals[1], "after-salvage", "D1", 1, 120); r.Status != 201 {
		t.Fatalf("a sale after salvage: %d %s", r.Status, r.Body)
	}
	t.Logf("%d of %d sales salvaged", salvaged, len(flows))
}
