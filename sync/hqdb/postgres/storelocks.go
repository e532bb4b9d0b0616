package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/posedge/posedge/sync/hqdb"
)

// Two posedge-hq processes storing batches that share stores used to
// deadlock: a batch locks day_totals rows, then its stores row, then the
// day_totals rows it creates, and PostgreSQL found each cycle only after
// deadlock_timeout (1 s), then one batch was retried. The chain benchmark
// drained 200,000 rows at 24,950 rows/s with one posedge-hq and at 13,166
// and 6,062 with two and four (9 and 40 deadlocks; docs/performance.md).
// Every row a batch writes belongs to one of its stores, so a batch first
// takes a transaction-scoped advisory lock per store, in one order shared
// by every process: batches with a store in common then run one after
// the other, and no lock of theirs can wait in a cycle.

// storeLockClass is the first key of those advisory locks (the two-int4
// form, apart from schemaLock's int8 form): "pehq".
const storeLockClass = 0x70656871

// pgLockStores takes them in the order of the array ($2).
const pgLockStores = `SELECT pg_advisory_xact_lock($1::int4, k) FROM unnest($2::int4[]) AS k`

// storeLockKeys is the second keys of msgs' stores, sorted, each once.
// Two stores may share a key: they then wait for each other, no more.
func storeLockKeys(msgs []hqdb.Msg) []int32 {
	keys := make([]int32, 0, 8)
	last := ""
	for i := range msgs {
		id := msgs[i].StoreID
		if id == last {
			continue // the common case: a store's messages arrive together
		}
		last = id
		h := fnv.New32a()
		h.Write([]byte(id))
		keys = append(keys, int32(h.Sum32()))
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// lockStores takes the batch's store locks inside tx (the careful path).
func lockStores(ctx context.Context, tx pgx.Tx, msgs []hqdb.Msg) error {
	if _, err := tx.Exec(ctx, pgLockStores, int32(storeLockClass), storeLockKeys(msgs)); err != nil {
		return fmt.Errorf("lock the batch's stores: %w", err)
	}
	return nil
}
