package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/posedge/posedge/internal/privfile"
)

// States of a row on its way to HQ.
const (
	StatePending = "pending" // journaled, not acknowledged; rows at or below the outbox's "sent through" mark may be at HQ already
	StateSent    = "sent"    // a publish got no ack (timeout, refusal): resent with the same Nats-Msg-Id
	// StateAcked: JetStream acknowledged it. Delivered only once HQ
	// confirmed storing it too (confirmed_at set, see MarkConfirmed):
	// until then the row is kept, asked about and resent when HQ lacks it.
	StateAcked       = "acked"
	StateQuarantined = "quarantined" // HQ refused it for good; kept, not resent
)

// Modes a transaction was recorded in.
const (
	ModeNormal    = "normal"    // Redis applied it before the journal commit
	ModeDegraded  = "degraded"  // Redis was down: applied later by the reconciler
	ModeRecovered = "recovered" // found in Redis after a crash, journaled late
)

// Errors callers tell apart with errors.Is.
var (
	// ErrDuplicateKey: the terminal already journaled a transaction with
	// this idempotency key; the caller replays that one.
	ErrDuplicateKey = errors.New("idempotency key already journaled")
	// ErrDuplicateFlow: the flow number is already taken. It must never
	// happen; seeing it means the sequence went back (a failover lost INCRs).
	ErrDuplicateFlow = errors.New("flow number already journaled")
	// ErrUnavailable: the write could not be made durable (disk full, I/O
	// error, closed journal). The sale must not be acknowledged.
	ErrUnavailable = errors.New("journal unavailable")
)

// Line is one line of a sale or refund.
type Line struct {
	Barcode    string `json:"barcode"`
	Qty        int64  `json:"qty"`
	PriceCents int64  `json:"price_cents"`
}

// Txn is one journaled sale or refund.
type Txn struct {
	FlowNo         string
	Seq            int64 // Redis sequence number of a normal-mode flow number, else 0
	TerminalID     string
	IdemKey        string
	Fingerprint    string
	Kind           string // sale | refund
	OriginalFlowNo string
	Tender         string
	TotalCents     int64
	BusinessDay    string // YYYYMMDD in the store's time zone
	BusinessHour   string // 00..23
	CreatedAt      time.Time
	Lines          []Line
	Body           []byte // the JSON answered to the terminal, byte for byte
	Mode           string
	Applied        bool // its effects are in Redis
	State          string
	Attempts       int
	LastError      string
}

// Options tune a journal.
type Options struct {
	BusyTimeout  time.Duration // default 10s
	MaxBatch     int           // transactions sharing one commit; default 128
	MaxPageCount int64         // SQLite max_page_count, 0 = unlimited (tests fill the disk with it)
	ReadOnly     bool          // for `posedge status` when the daemon is down
	OnCommit     func(n int)   // called after each durable commit with the number of writes it held (metrics)
	Logger       *slog.Logger
	// Now is the clock of the times the journal stamps itself
	// (journaled_at, acked_at, set-aside times); default time.Now.
	Now func() time.Time
}

// Journal is an open journal file.
type Journal struct {
	path string
	w    *sql.DB // exactly one connection: the single writer
	r    *sql.DB // readers; WAL lets them run beside the writer
	// scan holds the reads that walk the whole file (quick_check, stats,
	// prune's search, manifests, the reconciliation's sums, backup): on a
	// journal of a million rows each takes a second or more, and on r
	// four of them at once left a till's idempotency lookup waiting for a
	// connection (874 ms to a restarted daemon's first 201). Its own pool,
	// so the tills' reads never queue behind them. A read-only open
	// shares r.
	scan *sql.DB
	log  *slog.Logger
	opt  Options
	st   *stmts
	// catalog: the journal has the catalog table. Always after a writable
	// open (it migrates); a read-only open of a journal no daemon of this
	// version has opened yet goes without it (catalog not initialised).
	catalog bool
	// confirm: txns has the delivery confirmation's columns. Always after
	// a writable open; a read-only open of an older journal goes without
	// (every acked row then counts as unconfirmed: not known otherwise).
	confirm bool
	// firstAck: txns has first_acked_at and stream_seq (schema version
	// 3). Always after a writable open; a read-only open of an older
	// journal ages unconfirmed rows by their last ack instead.
	firstAck bool

	// damaged is the finding of the QuickCheck that failed (an error
	// wrapping ErrDamaged), nil until then: from then on the journal
	// takes no write (Damaged).
	damaged atomic.Pointer[error]

	// keys: the idempotency keys the journal may hold (keyfilter.go); nil
	// on a read-only journal. keysStop ends its build at Close, keysDone
	// says it ended.
	keys     *keyFilter
	keysStop context.CancelFunc
	keysDone chan struct{}

	reqs    chan *writeReq
	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once
}

// scanConns is how many whole-file reads run at once; more wait for one
// another (never for the tills' readers).
const scanConns = 3

func dsn(path string, o Options, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", o.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	if readOnly {
		q.Add("mode", "ro")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(FULL)")
		q.Add("_txlock", "immediate")
		if o.MaxPageCount > 0 {
			q.Add("_pragma", fmt.Sprintf("max_page_count(%d)", o.MaxPageCount))
		}
	}
	return "file:" + path + "?" + q.Encode()
}

// Open opens (creating if needed) the journal at path and migrates its
// schema; ErrDamaged when SQLite finds the file malformed on the way.
// It reads no more of the file than that: the integrity check of every
// page is QuickCheck's, which the daemon runs in the background.
func Open(ctx context.Context, path string, o Options) (*Journal, error) {
	if o.BusyTimeout == 0 {
		o.BusyTimeout = 10 * time.Second
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = 128
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	j := &Journal{path: path, log: o.Logger, opt: o, reqs: make(chan *writeReq, 1024),
		stop: make(chan struct{}), stopped: make(chan struct{})}
	if o.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("open journal %s read-only: %w", path, err)
		}
		r, err := sql.Open("sqlite", dsn(path, o, true))
		if err != nil {
			return nil, fmt.Errorf("open journal %s: %w", path, err)
		}
		// Read-only never migrates: a journal this version has not opened
		// for writing yet lacks the catalog's table, and reads without it.
		if err := r.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'catalog'`).
			Scan(&j.catalog); err != nil {
			r.Close()
			if isCorrupt(err) {
				return nil, fmt.Errorf("%w: %s: %v", ErrDamaged, path, err)
			}
			return nil, fmt.Errorf("open journal %s read-only: %w", path, err)
		}
		if j.confirm, err = hasColumn(ctx, r, "txns", "confirmed_at"); err != nil {
			r.Close()
			return nil, fmt.Errorf("open journal %s read-only: %w", path, err)
		}
		if j.firstAck, err = hasColumn(ctx, r, "txns", "first_acked_at"); err != nil {
			r.Close()
			return nil, fmt.Errorf("open journal %s read-only: %w", path, err)
		}
		if j.st, err = prepareStmts(ctx, r, nil, j.catalog); err != nil {
			r.Close()
			if strings.Contains(err.Error(), "no such table") {
				return nil, fmt.Errorf("open journal %s read-only: written by an older posedge and not yet upgraded (start the daemon once): %w", path, err)
			}
			return nil, fmt.Errorf("open journal %s: %w", path, err)
		}
		j.r, j.scan = r, r
		close(j.stopped)
		return j, nil
	}
	// 0600 whatever the umask, and tightened if an older version or a
	// copy left it wider (issue 22 finding 9).
	tightened, err := privfile.Ensure(path)
	if err != nil {
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	if len(tightened) > 0 {
		o.Logger.Warn("journal files were readable by other users; made private (mode 0600)", "files", tightened)
	}
	w, err := sql.Open("sqlite", dsn(path, o, false))
	if err != nil {
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := migrate(ctx, w, o.Logger); err != nil {
		w.Close()
		if isCorrupt(err) {
			return nil, fmt.Errorf("%w: %s: %v", ErrDamaged, path, err)
		}
		return nil, fmt.Errorf("migrate journal %s: %w", path, err)
	}
	// No quick_check here: it reads every page (14 s on a journal of 2
	// million sales) and the tills would wait for it. The daemon runs
	// QuickCheck behind the listener instead (docs/durability.md,
	// Start-up); a file too damaged to migrate is refused above.
	r, err := sql.Open("sqlite", dsn(path, Options{BusyTimeout: o.BusyTimeout}, false))
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open journal readers %s: %w", path, err)
	}
	r.SetMaxOpenConns(4)
	scan, err := sql.Open("sqlite", dsn(path, Options{BusyTimeout: o.BusyTimeout}, false))
	if err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("open journal readers %s: %w", path, err)
	}
	scan.SetMaxOpenConns(scanConns)
	j.catalog, j.confirm, j.firstAck = true, true, true
	if j.st, err = prepareStmts(ctx, r, w, true); err != nil {
		scan.Close()
		r.Close()
		w.Close()
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	j.w, j.r, j.scan = w, r, scan
	j.startKeyFilter(ctx)
	go j.writer()
	return j, nil
}

// CatalogInitialised reports whether the journal holds the catalog's
// table: false only for a read-only open of a journal no daemon of this
// version has opened yet (the daemon creates it at its next start).
func (j *Journal) CatalogInitialised() bool { return j.catalog }

// Path is the journal file.
func (j *Journal) Path() string { return j.path }

// Close stops the writer after the writes already queued and closes the file.
func (j *Journal) Close() error {
	j.once.Do(func() { close(j.stop) })
	<-j.stopped
	if j.keysStop != nil {
		j.keysStop()
		<-j.keysDone
	}
	errs := []error{j.st.close()}
	if j.w != nil {
		errs = append(errs, j.w.Close())
	}
	if j.scan != j.r {
		errs = append(errs, j.scan.Close())
	}
	errs = append(errs, j.r.Close())
	return errors.Join(errs...)
}

const schema = `
CREATE TABLE IF NOT EXISTS txns (
	flow_no          TEXT PRIMARY KEY,
	seq              INTEGER NOT NULL DEFAULT 0,
	terminal_id      TEXT NOT NULL,
	idem_key         TEXT NOT NULL,
	fingerprint      TEXT NOT NULL,
	kind             TEXT NOT NULL CHECK (kind IN ('sale','refund')),
	original_flow_no TEXT NOT NULL DEFAULT '',
	tender           TEXT NOT NULL,
	total_cents      INTEGER NOT NULL CHECK (total_cents >= 0),
	business_day     TEXT NOT NULL,
	business_hour    TEXT NOT NULL,
	created_at       TEXT NOT NULL,
	body             BLOB NOT NULL,
	mode             TEXT NOT NULL,
	applied          INTEGER NOT NULL DEFAULT 1,
	state            TEXT NOT NULL DEFAULT 'pending',
	attempts         INTEGER NOT NULL DEFAULT 0,
	last_error       TEXT NOT NULL DEFAULT '',
	journaled_at     TEXT NOT NULL,
	acked_at         TEXT,
	confirmed_at     TEXT,
	resends          INTEGER NOT NULL DEFAULT 0,
	lacks            INTEGER NOT NULL DEFAULT 0,
	dup_ack          INTEGER NOT NULL DEFAULT 0,
	confirm_due      TEXT,
	stream_seq       INTEGER NOT NULL DEFAULT 0,
	first_acked_at   TEXT,
	UNIQUE (terminal_id, idem_key)
);
CREATE INDEX IF NOT EXISTS txns_outbox ON txns(state) WHERE state IN ('pending','sent');
CREATE INDEX IF NOT EXISTS txns_unapplied ON txns(applied) WHERE applied = 0;
CREATE INDEX IF NOT EXISTS txns_day ON txns(business_day);
CREATE INDEX IF NOT EXISTS txns_seq ON txns(seq);
CREATE INDEX IF NOT EXISTS txns_original ON txns(original_flow_no) WHERE original_flow_no != '';
-- Few rows: the quarantined count of every backlog figure, which scanned
-- the journal without it (BacklogStats).
CREATE INDEX IF NOT EXISTS txns_quarantined ON txns(state) WHERE state = 'quarantined';
CREATE TABLE IF NOT EXISTS txn_lines (
	flow_no     TEXT NOT NULL REFERENCES txns(flow_no) ON DELETE CASCADE,
	n           INTEGER NOT NULL,
	barcode     TEXT NOT NULL,
	qty         INTEGER NOT NULL,
	price_cents INTEGER NOT NULL,
	PRIMARY KEY (flow_no, n)
);
CREATE TABLE IF NOT EXISTS items (
	barcode     TEXT PRIMARY KEY,
	name        TEXT NOT NULL,
	price_cents INTEGER NOT NULL,
	stock       INTEGER NOT NULL,
	updated_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS quarantine (
	flow_no TEXT PRIMARY KEY REFERENCES txns(flow_no) ON DELETE CASCADE,
	reason  TEXT NOT NULL,
	at      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
`

// migrate brings the journal to the current schema in one transaction:
// the tables this version added (CREATE TABLE IF NOT EXISTS), then the
// upgrades of the rows in place a journal of an earlier schema version
// needs (see upgrades).
func migrate(ctx context.Context, db *sql.DB, log *slog.Logger) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schema+unappliableSchema+catalogSchema+adjustmentsSchema); err != nil {
		return fmt.Errorf("create tables: %w", err)
	}
	if err := upgrade(ctx, tx, log); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// writeReq is one unit of work for the single writer: fn runs inside a
// savepoint of the shared transaction, so one failing request does not
// undo the others committed in the same fsync.
type writeReq struct {
	ctx  context.Context
	fn   func(tx *sql.Tx) error
	done chan error
	// rerun: fn only writes to the database (no state of its own), so it
	// may run again after its batch was rolled back (commitPlain).
	rerun bool
}

// write queues fn for the writer and waits until it is durable (its
// transaction committed with synchronous=FULL) or failed.
func (j *Journal) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return j.queue(ctx, fn, false)
}

// writeRerun is write for an fn that may run twice: it only writes to the
// database, and the second run sees none of the first (rolled back).
func (j *Journal) writeRerun(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return j.queue(ctx, fn, true)
}

func (j *Journal) queue(ctx context.Context, fn func(tx *sql.Tx) error, rerun bool) error {
	if j.w == nil {
		return fmt.Errorf("%w: opened read-only", ErrUnavailable)
	}
	if err := j.Damaged(); err != nil {
		// Writing on a damaged b-tree can spread the damage to pages
		// still readable, which salvage would save.
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	req := &writeReq{ctx: ctx, fn: fn, done: make(chan error, 1), rerun: rerun}
	select {
	case j.reqs <- req:
	case <-j.stop:
		return fmt.Errorf("%w: closed", ErrUnavailable)
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once queued, wait for the outcome even if ctx ends: the caller must
	// know whether its row is durable. A send can win the select above
	// against a closed stop (select picks among ready cases at random) and
	// land in the buffer after the writer's last drain: then no one will
	// answer it. The writer answers before it closes stopped, so a done
	// still empty once stopped is closed means fn never ran.
	select {
	case err := <-req.done:
		return err
	case <-j.stopped:
		select {
		case err := <-req.done:
			return err
		default:
			return fmt.Errorf("%w: closed", ErrUnavailable)
		}
	}
}

func (j *Journal) writer() {
	defer close(j.stopped)
	for {
		var first *writeReq
		select {
		case first = <-j.reqs:
		case <-j.stop:
			// Drain what was queued before Close.
			for {
				select {
				case r := <-j.reqs:
					j.commit([]*writeReq{r})
				default:
					return
				}
			}
		}
		batch := []*writeReq{first}
	fill:
		for len(batch) < j.opt.MaxBatch {
			select {
			case r := <-j.reqs:
				batch = append(batch, r)
			default:
				break fill
			}
		}
		j.commit(batch)
	}
}

// commit runs a batch in one transaction: one fsync for all of them.
func (j *Journal) commit(batch []*writeReq) {
	if j.commitPlain(batch) {
		return
	}
	j.commitSavepoints(batch)
}

// commitPlain commits a batch of writes that may run again (writeRerun:
// the appends of sales and refunds) without a savepoint around each: a
// savepoint makes SQLite copy every page a write touches into its
// statement journal first, ~12 µs of a sale's ~125 µs of journal CPU
// (issue 26). Should any write fail — a duplicate key, a full disk — the
// whole transaction is rolled back, nothing of it durable, and false
// tells commit to run the batch again one savepoint per write, which
// refuses that write alone. A batch with a write that may not run twice
// is left to commitSavepoints at once.
func (j *Journal) commitPlain(batch []*writeReq) bool {
	for _, r := range batch {
		if !r.rerun {
			return false
		}
	}
	tx, err := j.w.Begin()
	if err != nil {
		return false // commitSavepoints meets it again and says so
	}
	results := make([]error, len(batch))
	for i, r := range batch {
		if r.ctx.Err() != nil {
			results[i] = r.ctx.Err()
			continue
		}
		if err := r.fn(tx); err != nil {
			tx.Rollback()
			return false
		}
	}
	if err := tx.Commit(); err != nil {
		tx.Rollback()
		j.log.Error("journal commit failed", "err", err, "batch", len(batch))
		for _, r := range batch {
			r.done <- fmt.Errorf("%w: commit: %v", ErrUnavailable, err)
		}
		return true
	}
	if j.opt.OnCommit != nil {
		j.opt.OnCommit(len(batch))
	}
	for i, r := range batch {
		r.done <- results[i]
	}
	return true
}

// commitSavepoints runs a batch in one transaction, each write inside a
// savepoint of its own: a write that fails is rolled back alone and
// refused, the others committed.
func (j *Journal) commitSavepoints(batch []*writeReq) {
	fail := func(err error) {
		for _, r := range batch {
			r.done <- err
		}
	}
	tx, err := j.w.Begin()
	if err != nil {
		fail(fmt.Errorf("%w: begin: %v", ErrUnavailable, err))
		return
	}
	results := make([]error, len(batch))
	savepoint, release := tx.Stmt(j.st.savepoint), tx.Stmt(j.st.releaseSavepoint)
	for i, r := range batch {
		if r.ctx.Err() != nil {
			results[i] = r.ctx.Err()
			continue
		}
		if _, err := savepoint.Exec(); err != nil {
			tx.Rollback()
			fail(fmt.Errorf("%w: savepoint: %v", ErrUnavailable, err))
			return
		}
		if err := r.fn(tx); err != nil {
			results[i] = classify(err)
			if _, rerr := tx.Stmt(j.st.rollbackTo).Exec(); rerr != nil {
				// SQLite already rolled the whole transaction back (it does
				// on SQLITE_FULL and I/O errors): nothing of this batch is
				// durable; say why in the request's own words.
				tx.Rollback()
				fail(fmt.Errorf("%w: %v", ErrUnavailable, err))
				return
			}
		}
		if _, err := release.Exec(); err != nil {
			tx.Rollback()
			fail(fmt.Errorf("%w: release savepoint: %v", ErrUnavailable, err))
			return
		}
	}
	if err := tx.Commit(); err != nil {
		tx.Rollback()
		j.log.Error("journal commit failed", "err", err, "batch", len(batch))
		fail(fmt.Errorf("%w: commit: %v", ErrUnavailable, err))
		return
	}
	if j.opt.OnCommit != nil {
		j.opt.OnCommit(len(batch))
	}
	for i, r := range batch {
		r.done <- results[i]
	}
}

// classify turns SQLite errors into the journal's error values.
func classify(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			if strings.Contains(se.Error(), "idem_key") {
				return fmt.Errorf("%w: %v", ErrDuplicateKey, err)
			}
			return fmt.Errorf("%w: %v", ErrDuplicateFlow, err)
		case sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		if se.Code()&0xff == sqlite3.SQLITE_FULL || se.Code()&0xff == sqlite3.SQLITE_IOERR {
			return fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
	}
	return err
}

// timeLayout is how the journal keeps a time: UTC with all nine digits
// of the fraction, so that text order — what SQLite compares and sorts
// the time columns by — is time order. RFC 3339 as Go writes it trims
// the fraction's trailing zeros, and then "…:00Z" sorts after
// "…:00.5Z" and "…:00.1Z" after "…:00.15Z".
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// ts is the one form of every time written to the journal, whether as a
// column's value or as an argument compared with one.
func ts(t time.Time) string { return t.UTC().Format(timeLayout) }

// parseTS reads a time the journal kept: timeLayout, or the trimmed
// RFC 3339 of a journal not yet upgraded (opened read-only); the zero
// time when it is neither.
func parseTS(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// parseNullTS is parseTS of a column that may be NULL: nil then.
func parseNullTS(s sql.NullString) *time.Time {
	if !s.Valid {
		return nil
	}
	t := parseTS(s.String)
	return &t
}
