package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
)

// The journal's metadata: a few values it keeps about itself, in its
// meta table, for the jobs that read it.

// Meta keys.
const (
	MetaPrunedMaxSeq  = "pruned_max_seq"     // highest sequence number pruning ever deleted
	MetaGapCheckedSeq = "flowgap_checked"    // continuity checked up to this sequence number
	MetaReconcileFrom = "reconcile_from_day" // first business day the journal holds whole
	// MetaPrunedMaxFlowPrefix + a degraded prefix ("2" + node id): the
	// highest degraded flow number of that node pruning ever deleted.
	MetaPrunedMaxFlowPrefix = "pruned_max_flow:"
)

// degradedFlowDigits is the width of a degraded number's per-node
// sequence (design.md: "2" + node id + 14 digits).
const degradedFlowDigits = 14

// degradedPrefixOf is a degraded flow number's prefix ("2" + node id).
func degradedPrefixOf(flow string) (string, bool) {
	if len(flow) <= degradedFlowDigits+1 || flow[0] != '2' {
		return "", false
	}
	return flow[:len(flow)-degradedFlowDigits], true
}

// Meta reads a value the journal keeps about itself; ok is false when unset.
func (j *Journal) Meta(ctx context.Context, k string) (v string, ok bool, err error) {
	err = j.r.QueryRowContext(ctx, `SELECT v FROM meta WHERE k = ?`, k).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read journal meta %s: %w", k, err)
	}
	return v, true, nil
}

// MetaInt reads an integer meta value; 0 when unset.
func (j *Journal) MetaInt(ctx context.Context, k string) (int64, error) {
	v, ok, err := j.Meta(ctx, k)
	if err != nil || !ok {
		return 0, err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("journal meta %s: %q is not a number", k, v)
	}
	return n, nil
}

// SetMeta stores a value the journal keeps about itself.
func (j *Journal) SetMeta(ctx context.Context, k, v string) error {
	return j.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.Exec(`INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = excluded.v`, k, v)
		return err
	})
}
