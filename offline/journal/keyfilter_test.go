package journal

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// The filter lets a sale skip the journal's key look-up only when the
// journal cannot hold its key: a "no" to a journaled key would let a
// retry be recorded twice. Rows already in the file (scanned at Open) and
// rows appended while the scan runs must both be "maybe"; keys never
// journaled mostly "no", or the filter saves nothing.
func TestKeyFilterNeverSaysNoToAJournaledKey(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	journalWithSales(t, path, 300)
	j := reopen(t, path)
	for i := 301; i <= 400; i++ { // while the scan may still run
		if err := j.Append(ctx, sale(i)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for !j.keys.ready.Load() {
		if time.Now().After(deadline) {
			t.Fatal("key filter not built after 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i := 1; i <= 400; i++ {
		if s := sale(i); !j.MayHoldKey(s.TerminalID, s.IdemKey) {
			t.Fatalf("filter says the journal cannot hold %s/%s, which it does", s.TerminalID, s.IdemKey)
		}
	}
	maybe := 0
	for i := 1; i <= 2000; i++ {
		// Other keys, and the same keys of another terminal.
		if j.MayHoldKey("T01", fmt.Sprintf("absent-%d", i)) {
			maybe++
		}
		if j.MayHoldKey("T02", fmt.Sprintf("k%d", i%400+1)) {
			maybe++
		}
	}
	if maybe > 40 { // ~0.25 % expected: 10 of 4000
		t.Fatalf("filter says maybe to %d of 4000 keys never journaled: it filters nothing", maybe)
	}
}

// Until the scan of the rows already there ends, every key is "maybe":
// the look-up decides, as before the filter.
func TestKeyFilterSaysMaybeUntilBuilt(t *testing.T) {
	f := newKeyFilter(0)
	if !f.mayHold("T01", "never") {
		t.Fatal("a filter still being built said no")
	}
	f.ready.Store(true)
	if f.mayHold("T01", "never") {
		t.Fatal("an empty, built filter said maybe") // 0 bits set: no false positive possible
	}
	f.add("T01", "never")
	if !f.mayHold("T01", "never") {
		t.Fatal("a key added is not held")
	}
}

// A read-only journal (posedge status) builds no filter: always maybe.
func TestKeyFilterReadOnlyJournalSaysMaybe(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	j, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.Close()
	ro, err := Open(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if !ro.MayHoldKey("T01", "k1") {
		t.Fatal("a read-only journal said no")
	}
}
