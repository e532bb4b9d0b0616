package journal

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"
)

// Stats describe the journal for status, metrics and technicians.
type Stats struct {
	Path         string     `json:"path"`
	SizeBytes    int64      `json:"size_bytes"`
	Rows         int64      `json:"rows"`
	Backlog      int64      `json:"backlog"`
	BacklogBytes int64      `json:"backlog_bytes"`
	OldestUnsent *time.Time `json:"oldest_unsynced_at"`
	LastAckedAt  *time.Time `json:"last_acked_at"`
	Quarantined  int64      `json:"quarantined"`
	Unapplied    int64      `json:"unapplied"`
	// Unappliable counts transactions Redis refused to apply (set aside;
	// see SetUnappliable).
	Unappliable int64  `json:"unappliable"`
	MaxFlowNo   string `json:"max_flow_no"`
	// Unconfirmed counts rows JetStream acknowledged that HQ has not
	// confirmed storing; OldestUnconfirmedAck is the earliest first ack
	// among them (the first of each row's way to HQ, kept across
	// resends; nil when none).
	Unconfirmed          int64      `json:"unconfirmed"`
	OldestUnconfirmedAck *time.Time `json:"oldest_unconfirmed_ack_at"`
}

// Stats reads the journal's figures, for a status: BacklogStats and
// LastAckedAt.
func (j *Journal) Stats(ctx context.Context) (Stats, error) {
	s, err := j.BacklogStats(ctx)
	if err != nil {
		return s, err
	}
	s.LastAckedAt, err = j.LastAckedAt(ctx)
	return s, err
}

// LastAckedAt is the time of the latest acknowledgement still on a row
// (nil when none). No index holds it: SQLite reads every acknowledged row
// (0.64 s at 2,000,000 rows in BenchmarkStats, ~1 s on make bench's
// grown journal), so a caller that knows the time another way (the
// running replayer) does not ask.
func (j *Journal) LastAckedAt(ctx context.Context) (*time.Time, error) {
	var acked sql.NullString
	if err := j.scan.QueryRowContext(ctx, `SELECT MAX(acked_at) FROM txns WHERE state = 'acked'`).Scan(&acked); err != nil {
		return nil, fmt.Errorf("read the journal's last acknowledgement: %w", err)
	}
	return parseNullTS(acked), nil
}

// BacklogStats reads the journal's figures but LastAckedAt, each through
// an index (or the rows' count, a walk of the smallest index): what the
// replayer reads every few seconds, and the daemon for each status.
// Stats read whole every 10 s took 2.1-2.4 s of CPU at 2,000,000 rows
// (2026-12-06), a tenth of the box. TestBacklogStatsReadByIndex checks
// the plan; BenchmarkStats times both at two sizes.
func (j *Journal) BacklogStats(ctx context.Context) (Stats, error) {
	s := Stats{Path: j.path}
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(j.path + suffix); err == nil {
			s.SizeBytes += fi.Size()
		}
	}
	var oldest, maxFlow, unconfirmedAck sql.NullString
	err := j.scan.QueryRowContext(ctx, j.backlogQuery()).
		Scan(&s.Rows, &s.Backlog, &s.BacklogBytes, &oldest, &s.Quarantined, &s.Unapplied, &s.Unappliable, &maxFlow,
			&s.Unconfirmed, &unconfirmedAck)
	if err != nil {
		return s, fmt.Errorf("read journal stats: %w", err)
	}
	s.OldestUnsent = parseNullTS(oldest)
	s.OldestUnconfirmedAck = parseNullTS(unconfirmedAck)
	s.MaxFlowNo = maxFlow.String
	return s, nil
}

// backlogQuery is BacklogStats' one statement. Each WHERE repeats a
// partial index's (txns_outbox, txns_quarantined, txns_unapplied,
// txns_unconfirmed) so that SQLite may use it.
func (j *Journal) backlogQuery() string {
	unconfirmed := `state = 'acked'` // a journal not upgraded yet: none confirmed
	if j.confirm {
		unconfirmed = `state = 'acked' AND confirmed_at IS NULL`
	}
	// An unconfirmed row's age counts from its first ack: a resend's ack
	// must not make a row HQ keeps lacking look young (status WARN).
	firstAck := `acked_at`
	if j.firstAck {
		firstAck = `COALESCE(first_acked_at, acked_at)`
	}
	return `SELECT
		(SELECT COUNT(*) FROM txns),
		(SELECT COUNT(*) FROM txns WHERE state IN ('pending','sent')),
		(SELECT COALESCE(SUM(LENGTH(body)),0) FROM txns WHERE state IN ('pending','sent')),
		(SELECT MIN(created_at) FROM txns WHERE state IN ('pending','sent')),
		(SELECT COUNT(*) FROM txns WHERE state = 'quarantined'),
		(SELECT COUNT(*) FROM txns WHERE applied = 0),
		(SELECT COUNT(*) FROM unappliable),
		(SELECT MAX(flow_no) FROM txns),
		(SELECT COUNT(*) FROM txns WHERE ` + unconfirmed + `),
		(SELECT MIN(` + firstAck + `) FROM txns WHERE ` + unconfirmed + `)`
}

// Verify runs SQLite's full integrity check.
func (j *Journal) Verify(ctx context.Context) error {
	return check(ctx, j.scan, j.path, "integrity_check")
}

// Backup writes a consistent copy of the journal to dest (VACUUM INTO),
// safe while the daemon sells.
func (j *Journal) Backup(ctx context.Context, dest string) error {
	// Created empty with mode 0600 first (VACUUM INTO accepts an empty
	// file): the copy holds every sale, like the journal itself.
	f, err := os.OpenFile(dest, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("backup %s: file exists; choose a new name", dest)
	}
	if err != nil {
		return fmt.Errorf("backup journal to %s: %w", dest, err)
	}
	f.Close()
	if _, err := j.scan.ExecContext(ctx, `VACUUM INTO ?`, dest); err != nil {
		os.Remove(dest)
		return fmt.Errorf("backup journal to %s: %w", dest, err)
	}
	return nil
}

// Prune deletes delivered rows journaled before cutoff; rows HQ has not
// confirmed storing (JetStream's ack is not enough), or whose effects
// Redis lacks, are never deleted. It works
// in small batches, each its own commit, so sales never wait long behind
// it, and remembers the highest sequence number it deleted so the
// continuity check never mistakes pruned rows for gaps.
func (j *Journal) Prune(ctx context.Context, cutoff time.Time) (int64, error) {
	const batch = 500
	var total int64
	for {
		// The rows due are looked for on a reader: the search scans the
		// table (no index serves it) — a second on a journal of millions
		// — and in the writer it would hold every sale behind it, at each
		// start. The writer deletes those still due, checked again.
		ids, err := j.prunable(ctx, cutoff, batch)
		if err != nil || len(ids) == 0 {
			if err != nil {
				err = fmt.Errorf("prune journal: %w", err)
			}
			return total, err
		}
		in := strings.Repeat(",?", len(ids))[1:]
		args := make([]any, 0, len(ids)+1)
		args = append(args, ts(cutoff))
		for _, id := range ids {
			args = append(args, id)
		}
		var n int64
		err = j.write(ctx, func(tx *sql.Tx) error {
			rows, err := tx.Query(`DELETE FROM txns WHERE `+prunableWhere+` AND rowid IN (`+in+`) RETURNING seq, flow_no`, args...)
			if err != nil {
				return err
			}
			var cnt, maxSeq int64
			maxDeg := map[string]string{} // degraded prefix → highest flow number deleted
			for rows.Next() {
				var s int64
				var flow string
				if err := rows.Scan(&s, &flow); err != nil {
					rows.Close()
					return err
				}
				cnt, maxSeq = cnt+1, max(maxSeq, s)
				if p, ok := degradedPrefixOf(flow); ok && flow > maxDeg[p] {
					maxDeg[p] = flow
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil || cnt == 0 {
				return err
			}
			if _, err = tx.Exec(`INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE
				SET v = CAST(MAX(CAST(v AS INTEGER), CAST(excluded.v AS INTEGER)) AS TEXT)`, MetaPrunedMaxSeq, maxSeq); err != nil {
				return err
			}
			// Degraded numbers carry no Redis sequence: their high-water
			// mark is kept per prefix (node), in the same commit as the
			// delete, so the next degraded number never reuses a pruned one.
			for p, f := range maxDeg {
				// Same prefix, same width: text order is numeric order.
				if _, err = tx.Exec(`INSERT INTO meta (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE
					SET v = MAX(v, excluded.v)`, MetaPrunedMaxFlowPrefix+p, f); err != nil {
					return err
				}
			}
			n = cnt
			return nil
		})
		total += n
		if err != nil {
			return total, fmt.Errorf("prune journal: %w", err)
		}
		if len(ids) < batch {
			return total, nil
		}
	}
}

// prunableWhere selects the rows Prune may delete: delivered (confirmed
// by HQ), applied to Redis, journaled before the cutoff (argument 1).
const prunableWhere = `state = 'acked' AND confirmed_at IS NOT NULL AND applied = 1 AND journaled_at < ?`

// prunable lists up to limit row ids Prune may delete, oldest first, read
// on a reader connection.
func (j *Journal) prunable(ctx context.Context, cutoff time.Time, limit int) ([]int64, error) {
	rows, err := j.scan.QueryContext(ctx, `SELECT rowid FROM txns WHERE `+prunableWhere+` ORDER BY rowid LIMIT ?`, ts(cutoff), limit)
	if err != nil {
		return nil, fmt.Errorf("find rows past retention: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("find rows past retention: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// Export writes every transaction as one JSON line (the body answered to
// the terminal, plus the journal's own state), oldest first.
func (j *Journal) Export(ctx context.Context, w io.Writer) error {
	rows, err := j.scan.QueryContext(ctx, `SELECT flow_no, state, mode, applied, attempts, last_error, body FROM txns ORDER BY rowid`)
	if err != nil {
		return fmt.Errorf("export journal: %w", err)
	}
	defer rows.Close()
	enc := json.NewEncoder(w)
	for rows.Next() {
		var e struct {
			FlowNo    string          `json:"flow_no"`
			State     string          `json:"state"`
			Mode      string          `json:"mode"`
			Applied   bool            `json:"applied"`
			Attempts  int             `json:"attempts"`
			LastError string          `json:"last_error,omitempty"`
			Body      json.RawMessage `json:"body"`
		}
		var body []byte
		if err := rows.Scan(&e.FlowNo, &e.State, &e.Mode, &e.Applied, &e.Attempts, &e.LastError, &body); err != nil {
			return fmt.Errorf("export journal: %w", err)
		}
		e.Body = body
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return rows.Err()
}
