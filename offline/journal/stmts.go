package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// stmts are the statements of the hot paths (every sale looks its key up,
// then appends; the replay reads the outbox a batch at a time), prepared
// once: SQLite compiles a statement on every plain Exec or Query, which
// was most of a key look-up's CPU. database/sql
// prepares each on a pool connection the first time it runs there and
// keeps it; in the writer's transaction tx.Stmt reuses the one prepared on
// the writer's only connection.
type stmts struct {
	byKey, byFlow, lines, item              *sql.Stmt // readers
	outbox, sentThrough                     *sql.Stmt // readers: the replay's batches
	insertTxn, insertLine                   *sql.Stmt // writer
	savepoint, releaseSavepoint, rollbackTo *sql.Stmt // writer: one per write
}

// prepareStmts prepares the readers' statements on r and, unless w is
// nil (a read-only journal), the writer's on w. Without the catalog table
// (a read-only journal not yet upgraded) every item reads as active.
func prepareStmts(ctx context.Context, r, w *sql.DB, catalog bool) (*stmts, error) {
	s := &stmts{}
	itemQuery := `SELECT i.barcode, i.name, i.price_cents, i.stock, i.updated_at, COALESCE(c.active, 1)
			FROM items i LEFT JOIN catalog c ON c.barcode = i.barcode WHERE i.barcode = ?`
	if !catalog {
		itemQuery = `SELECT barcode, name, price_cents, stock, updated_at, 1 FROM items WHERE barcode = ?`
	}
	all := []struct {
		db  *sql.DB
		dst **sql.Stmt
		q   string
	}{
		{r, &s.byKey, byKeyQuery},
		{r, &s.byFlow, byFlowQuery},
		{r, &s.lines, `SELECT barcode, qty, price_cents FROM txn_lines WHERE flow_no = ? ORDER BY n`},
		{r, &s.item, itemQuery},
		{r, &s.outbox, outboxQuery},
		{r, &s.sentThrough, sentThroughQuery},
		{w, &s.insertTxn, `INSERT INTO txns (flow_no, seq, terminal_id, idem_key, fingerprint, kind,
			original_flow_no, tender, total_cents, business_day, business_hour, created_at, body, mode,
			applied, state, journaled_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`},
		{w, &s.insertLine, `INSERT INTO txn_lines (flow_no, n, barcode, qty, price_cents) VALUES (?,?,?,?,?)`},
		{w, &s.savepoint, `SAVEPOINT w`},
		{w, &s.releaseSavepoint, `RELEASE w`},
		{w, &s.rollbackTo, `ROLLBACK TO w`},
	}
	for _, p := range all {
		if p.db == nil {
			continue
		}
		st, err := p.db.PrepareContext(ctx, p.q)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("prepare %q: %w", p.q, err)
		}
		*p.dst = st
	}
	return s, nil
}

func (s *stmts) close() error {
	var errs []error
	for _, st := range []*sql.Stmt{s.byKey, s.byFlow, s.lines, s.item, s.outbox, s.sentThrough, s.insertTxn, s.insertLine,
		s.savepoint, s.releaseSavepoint, s.rollbackTo} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	return errors.Join(errs...)
}

// The reads of a journaled transaction by idempotency key and by flow
// number, every retry's and refund's (TestPerSaleQueriesUseIndexes).
const (
	byKeyQuery  = `SELECT ` + txnCols + ` FROM txns WHERE terminal_id = ? AND idem_key = ?`
	byFlowQuery = `SELECT ` + txnCols + ` FROM txns WHERE flow_no = ?`
)
