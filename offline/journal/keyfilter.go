package journal

import (
	"context"
	"hash/maphash"
	"math/bits"
	"sync/atomic"
	"time"
)

// keyFilter tells which (terminal, idempotency key) pairs the journal may
// hold, so that a sale with a fresh key skips the SQLite look-up it used
// to make first (issue 26: `ByKey` was ~9 % of the daemon's CPU under
// load). It is a Bloom filter: "no" is certain, "maybe" sends the caller
// to the look-up, whose answer is the truth. It never forgets, so a row
// pruned since still says "maybe" (a look-up that finds nothing).
//
// No false "no": every key reaches it before its row can be committed —
// the rows already in the file by the background scan (build), every
// later Append by add, which Open arranges to see before any Append runs.
// Until the scan ends it says "maybe" to everything.
type keyFilter struct {
	seed  maphash.Seed
	words []atomic.Uint64
	mask  uint64 // len(words)*64 - 1
	ready atomic.Bool
}

// keyFilterHashes and keyFilterBitsPerKey: with 16 bits per key and 4
// hashes, about 1 key in 400 the journal does not hold still costs a
// look-up (a false positive); 2 million rows take 4 MiB.
const (
	keyFilterHashes     = 4
	keyFilterBitsPerKey = 16
	// keyFilterHeadroom keys are added to the rows found at Open when
	// sizing: years of sales of one store before the false positives
	// grow (they double at about twice the size; never a false "no").
	// A restart sizes it afresh.
	keyFilterHeadroom = 1 << 20
)

func newKeyFilter(rows int64) *keyFilter {
	n := max(rows, 0) + keyFilterHeadroom
	want := uint64(n) * keyFilterBitsPerKey
	m := uint64(1) << bits.Len64(want-1) // a power of two: a mask picks the bit
	return &keyFilter{seed: maphash.MakeSeed(), words: make([]atomic.Uint64, m/64), mask: m - 1}
}

func (f *keyFilter) hash(term, key string) (uint64, uint64) {
	var h maphash.Hash
	h.SetSeed(f.seed)
	h.WriteString(term)
	h.WriteByte(0) // terminal ids never hold a NUL: the pair is unambiguous
	h.WriteString(key)
	s := h.Sum64()
	return s, (s>>32 | s<<32) | 1 // double hashing: an odd step visits distinct bits
}

func (f *keyFilter) add(term, key string) {
	a, b := f.hash(term, key)
	for i := range uint64(keyFilterHashes) {
		p := (a + i*b) & f.mask
		f.words[p/64].Or(1 << (p % 64))
	}
}

// mayHold is false only when (term, key) was never added, and only once
// the scan of the rows that were already there is done.
func (f *keyFilter) mayHold(term, key string) bool {
	if !f.ready.Load() {
		return true
	}
	a, b := f.hash(term, key)
	for i := range uint64(keyFilterHashes) {
		p := (a + i*b) & f.mask
		if f.words[p/64].Load()&(1<<(p%64)) == 0 {
			return false
		}
	}
	return true
}

// startKeyFilter sizes the filter by the rows the journal holds and
// installs it, so the Appends after Open reach it, then scans those rows
// into it in the background (2 million rows take seconds; the tills do
// not wait: meanwhile every key is "maybe"). Called by Open before it
// returns, before any Append.
//
// A table it cannot read (a damaged journal) leaves no filter: every key
// is "maybe", looked up as before, and Open goes on, so that the daemon
// starts and says the journal is damaged (its quick_check) rather than
// dying at start.
func (j *Journal) startKeyFilter(ctx context.Context) {
	var rows int64
	// MAX(rowid) is one b-tree descent where COUNT(*) reads the table; it
	// is at least the row count (pruned rows leave gaps, never reuse).
	if err := j.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(rowid), 0) FROM txns`).Scan(&rows); err != nil {
		j.log.Warn("journal key filter not built; every sale looks its key up in the journal", "err", err)
		return
	}
	f := newKeyFilter(rows)
	j.keys = f
	bctx, cancel := context.WithCancel(context.Background())
	j.keysStop = cancel
	j.keysDone = make(chan struct{})
	go func() {
		defer close(j.keysDone)
		start := time.Now()
		n, err := j.scanKeys(bctx, f)
		if err != nil {
			// Not ready: every key stays "maybe", i.e. looked up as before.
			if bctx.Err() == nil {
				j.log.Warn("journal key filter not built; every sale looks its key up in the journal", "err", err)
			}
			return
		}
		f.ready.Store(true)
		j.log.Debug("journal key filter built", "rows", n, "took", time.Since(start))
	}()
}

// scanKeys adds the key of every row to f. The scan reads one snapshot;
// a row committed after it began came through Append, which added it.
func (j *Journal) scanKeys(ctx context.Context, f *keyFilter) (int64, error) {
	rows, err := j.scan.QueryContext(ctx, `SELECT terminal_id, idem_key FROM txns`)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var n int64
	var term, key string
	for rows.Next() {
		if err := rows.Scan(&term, &key); err != nil {
			return n, err
		}
		f.add(term, key)
		n++
	}
	return n, rows.Err()
}

// MayHoldKey reports whether the journal may hold a transaction of
// terminalID under key. False is certain (the caller may skip ByKey);
// true means ByKey decides. A read-only journal, or one whose filter is
// still being built at start-up, says true.
func (j *Journal) MayHoldKey(terminalID, key string) bool {
	if j.keys == nil {
		return true
	}
	return j.keys.mayHold(terminalID, key)
}
