package ledger

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/internal/businessday"
	"github.com/posedge/posedge/internal/cents"
	"github.com/posedge/posedge/offline/journal"
)

// DefaultWaitTimeout is redis.wait_timeout's default: how long a money
// write waits for replicas to acknowledge it (WAIT).
const DefaultWaitTimeout = 100 * time.Millisecond

// Config of a ledger.
type Config struct {
	StoreID        string
	NodeID         int
	Location       *time.Location
	RedisTimeout   time.Duration // deadline of one Redis call on the request path
	MinReplicasAck int           // WAIT for this many replicas after money writes
	WaitTimeout    time.Duration // 0 = DefaultWaitTimeout
	IdemTTL        time.Duration // how long Redis keeps an idempotency record; ≥ 24h
	MaxSaleCents   int64         // every price, line and total at most this; 0 = cents.DefaultMaxSaleCents
	// Now is the daemon's clock (nil = time.Now): tests jump it. It dates
	// sales, tokens and the business day; whether another owner's
	// in-flight record is abandoned is judged by Redis's clock instead
	// (existing), so a jump of this clock cannot change that verdict.
	Now func() time.Time

	// Health is told of each change of mode as it happens; may be nil.
	Health HealthReporter
}

// Ledger records sales and refunds.
type Ledger struct {
	cfg     Config
	rdb     redis.UniversalClient
	j       *journal.Journal
	log     *slog.Logger
	k       redisdb.Keys
	owner   string // this daemon instance (instanceOwner): tells its own in-flight records from a crashed one's
	now     func() time.Time
	metrics *metrics
	packer  *resultPacker // the result kept in idempotency records

	seqFloor    atomic.Int64 // highest Redis sequence number journaled
	degradedSeq atomic.Int64 // last degraded-mode sequence of this node
	redisDown   atomic.Bool
	// modeReportMu keeps a switch of mode and its report together, so
	// health never hears two concurrent switches in the wrong order.
	modeReportMu sync.Mutex
	// modeMu: degraded transactions are journaled under its read lock,
	// the hand-over to Redis takes it to apply the last of them (handOver).
	modeMu sync.RWMutex
	// catchingUp: a hand-over is applying the degraded backlog; degraded
	// transactions journaled meanwhile apply themselves (recordHeld).
	catchingUp  atomic.Bool
	inflightMu  sync.Mutex
	inflight    map[string]bool
	refundLocks sync.Map // original flow no → *sync.Mutex
	// catalogMu: a catalog change and the restore of lost items one at a
	// time, so a change never lands between the restore's two passes.
	catalogMu sync.Mutex
	// repairWanted: a catalog change found Redis lacking an item the
	// journal knows (it lost writes): Watch repairs at its next tick.
	repairWanted atomic.Bool
	// comps are the COMPLETED marks not sent yet: the next run carries
	// them (completions.go).
	comps completions
}

type metrics struct {
	sales          *prometheus.CounterVec
	waitShortfall  prometheus.Counter
	negativeStock  prometheus.Counter
	scriptSeconds  prometheus.Histogram
	journalSeconds prometheus.Histogram
	degraded       prometheus.Gauge
	recovered      prometheus.Counter
	failovers      prometheus.Counter
	unappliable    prometheus.Counter
	undone         *prometheus.CounterVec // by result: undone | failed
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		sales: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "posedge_sales_total",
			Help: "Sales and refunds journaled, by kind and mode."}, []string{"kind", "mode"}),
		waitShortfall: prometheus.NewCounter(prometheus.CounterOpts{Name: "posedge_redis_wait_shortfall_total",
			Help: "Money writes answered before min_replicas_ack replicas confirmed them (WAIT timed out)."}),
		negativeStock: prometheus.NewCounter(prometheus.CounterOpts{Name: "posedge_negative_stock_lines_total",
			Help: "Lines of batch-uploaded or degraded sales that took stock below zero."}),
		scriptSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "posedge_lua_script_seconds",
			Help: "Latency of the sale/refund Lua script including WAIT.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		journalSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "posedge_journal_commit_seconds",
			Help: "Latency of a journal append (group commit, fsync).", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "posedge_degraded",
			Help: "1 while Redis is unreachable or refuses writes and sales are journaled only."}),
		recovered: prometheus.NewCounter(prometheus.CounterOpts{Name: "posedge_recovered_sales_total",
			Help: "Sales found applied in Redis but missing from the journal (a crash between the two), journaled late."}),
		failovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "posedge_redis_master_changes_total",
			Help: "Redis master changes seen (Sentinel failover or restart); each triggers a repair from the journal."}),
		unappliable: prometheus.NewCounter(prometheus.CounterOpts{Name: "posedge_unappliable_transactions_total",
			Help: "Journaled transactions Redis refused to apply for a reason other than an outage, set aside (posedge journal quarantine list)."}),
		undone: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "posedge_journal_refused_undone_total",
			Help: "Sales and refunds Redis applied but the journal refused (answered 503 journal_unavailable), taken back in Redis, by result (undone, failed)."}, []string{"result"}),
	}
	m.undone.WithLabelValues("undone")
	m.undone.WithLabelValues("failed")
	for _, kind := range []string{"sale", "refund"} {
		for _, mode := range []string{journal.ModeNormal, journal.ModeDegraded, journal.ModeRecovered} {
			m.sales.WithLabelValues(kind, mode) // every series exists from the start, at 0
		}
	}
	if reg != nil {
		reg.MustRegister(m.failovers, m.sales, m.waitShortfall, m.negativeStock, m.scriptSeconds, m.journalSeconds, m.degraded, m.recovered, m.unappliable, m.undone)
	}
	return m
}

// New opens a ledger on Redis and the journal. It reads the journal's
// highest sequence numbers so flow numbers never repeat.
func New(ctx context.Context, cfg Config, rdb redis.UniversalClient, j *journal.Journal, log *slog.Logger, reg prometheus.Registerer) (*Ledger, error) {
	if cfg.Location == nil {
		cfg.Location = time.UTC
	}
	if cfg.RedisTimeout <= 0 {
		// One default, in edge/config (redis.timeout): a second one here
		// would drift from it.
		return nil, fmt.Errorf("ledger: RedisTimeout must be set (config redis.timeout)")
	}
	if cfg.WaitTimeout <= 0 {
		cfg.WaitTimeout = DefaultWaitTimeout // WAIT 0 would block for ever
	}
	if cfg.MaxSaleCents <= 0 {
		cfg.MaxSaleCents = cents.DefaultMaxSaleCents
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.IdemTTL < 24*time.Hour {
		cfg.IdemTTL = 48 * time.Hour
	}
	l := &Ledger{cfg: cfg, rdb: rdb, j: j, log: log, k: redisdb.NewKeys(cfg.StoreID), packer: newResultPacker(),
		owner: instanceOwner(cfg.NodeID), now: cfg.Now, metrics: newMetrics(reg), inflight: map[string]bool{}}
	floor, err := j.MaxSeq(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	l.comps.flush = l.completeAll
	l.seqFloor.Store(floor)
	maxDeg, err := j.MaxFlowWithPrefix(ctx, l.degradedPrefix())
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	if maxDeg != "" {
		n, _ := strconv.ParseInt(strings.TrimPrefix(maxDeg, l.degradedPrefix()), 10, 64)
		l.degradedSeq.Store(n)
	}
	return l, nil
}

// Flow numbers are 16 digits: "1" + 15-digit Redis sequence in normal
// mode, "2" + node id + 14-digit per-node sequence in degraded mode, so
// the two can never collide, nor two daemons' degraded numbers.
func (l *Ledger) degradedPrefix() string { return "2" + strconv.Itoa(l.cfg.NodeID) }

func (l *Ledger) nextDegradedFlow() string {
	return fmt.Sprintf("%s%014d", l.degradedPrefix(), l.degradedSeq.Add(1))
}

func seqOfFlow(flow string) int64 {
	if len(flow) == 16 && flow[0] == '1' {
		n, _ := strconv.ParseInt(flow[1:], 10, 64)
		return n
	}
	return 0
}

// Bounds are what a request to this ledger is checked against now:
// max_sale_cents and the daemon's clock.
func (l *Ledger) Bounds() Bounds { return Bounds{MaxSaleCents: l.cfg.MaxSaleCents, Now: l.now()} }

// Degraded reports whether sales are currently journaled without Redis.
func (l *Ledger) Degraded() bool { return l.redisDown.Load() }

// SetRedisDown switches degraded mode on or off (the health prober and
// failed calls decide).
func (l *Ledger) SetRedisDown(down bool) {
	l.modeReportMu.Lock()
	defer l.modeReportMu.Unlock()
	if l.redisDown.Swap(down) == down {
		return
	}
	if down {
		l.log.Warn("redis unavailable: degraded mode, sales are journaled only")
		l.metrics.degraded.Set(1)
	} else {
		l.log.Info("redis back: leaving degraded mode")
		l.metrics.degraded.Set(0)
	}
	if l.cfg.Health != nil {
		l.cfg.Health.LedgerMode(down)
	}
}

// Result is a recorded sale or refund as the terminal gets it.
type Result struct {
	Body     []byte // the JSON body, identical on every replay
	FlowNo   string
	Replayed bool
}

// claim marks (terminal, key) in flight in this process.
func (l *Ledger) claim(term, key string) bool {
	l.inflightMu.Lock()
	defer l.inflightMu.Unlock()
	id := term + "\x00" + key
	if l.inflight[id] {
		return false
	}
	l.inflight[id] = true
	return true
}

func (l *Ledger) release(term, key string) {
	l.inflightMu.Lock()
	delete(l.inflight, term+"\x00"+key)
	l.inflightMu.Unlock()
}

// fromJournal answers a key the journal already holds. A key its filter
// says it cannot hold (journal.MayHoldKey: most sales, a fresh key) is
// not looked up: the SQLite read was ~9 % of the daemon's CPU (issue 26).
func (l *Ledger) fromJournal(ctx context.Context, term, key, fp string) (*Result, error) {
	if !l.j.MayHoldKey(term, key) {
		return nil, nil
	}
	return l.byKey(ctx, term, key, fp)
}

// byKey is fromJournal's look-up, made whatever the filter says.
func (l *Ledger) byKey(ctx context.Context, term, key, fp string) (*Result, error) {
	t, err := l.j.ByKey(ctx, term, key)
	if err != nil {
		return nil, errJournal(err)
	}
	if t == nil {
		return nil, nil
	}
	if t.Fingerprint != fp {
		return nil, errKeyReused()
	}
	return &Result{Body: t.Body, FlowNo: t.FlowNo, Replayed: true}, nil
}

// outage tells whether err from a Redis call made for ctx means Redis is
// down, the condition for degraded mode. Once the caller has cancelled,
// whatever the call returned is no evidence either way, so a till hanging
// up can never switch the store's mode.
func outage(ctx context.Context, err error) bool {
	return redisdb.IsUnavailable(err) && !errors.Is(ctx.Err(), context.Canceled)
}

// txnArgs is one run of txn.lua.
type txnArgs struct {
	mode, term, key, fp, tender, day, hour string
	total                                  int64
	bodyRest                               string
	tokenForm                              bool
	flow                                   string // apply modes
	refundOf                               string
	lines                                  []scriptLine
}

type scriptLine struct {
	barcode               string
	qty, sold, refundedJr int64
}

// call is a's run of txn.lua (or txn_undo.lua) as the script takes it.
func (l *Ledger) call(a txnArgs) redisdb.Txn {
	t := redisdb.Txn{Mode: a.mode, Term: a.term, Key: a.key, Fingerprint: a.fp, Tender: a.tender, Day: a.day, Hour: a.hour,
		Total: a.total, Owner: l.owner, NowMillis: l.now().UnixMilli(), SeqFloor: l.seqFloor.Load(),
		IdemTTLSeconds: int64(l.cfg.IdemTTL / time.Second), BodyRest: l.packer.pack(a.bodyRest), TokenForm: a.tokenForm,
		Flow: a.flow, RefundOf: a.refundOf, MaxSaleCents: l.cfg.MaxSaleCents, Lines: make([]redisdb.TxnLine, len(a.lines))}
	for i, ln := range a.lines {
		t.Lines[i] = redisdb.TxnLine{Barcode: ln.barcode, Qty: ln.qty, Sold: ln.sold, RefundedJr: ln.refundedJr}
	}
	return t
}

// run executes txn.lua and WAITs for replicas on the same connection in one
// round trip. A NOSCRIPT (e.g. a just-promoted replica) is retried with EVAL.
func (l *Ledger) run(ctx context.Context, a txnArgs) ([]any, error) {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout+l.cfg.WaitTimeout)
	defer cancel()
	start := time.Now()
	defer func() { l.metrics.scriptSeconds.Observe(time.Since(start).Seconds()) }()
	var wait *redis.Cmd
	// A journaled transaction applied again (repair) is durable in the
	// journal already: it is not made to WAIT, which on a just-promoted
	// master whose replicas are still syncing would cost wait_timeout per
	// transaction and hold the repair (and normal mode) for minutes.
	wantWait := l.cfg.MinReplicasAck > 0 && !redisdb.IsApply(a.mode)
	// The COMPLETED marks of sales answered since the last run ride in
	// this call of txn.lua itself (issue 26: a script call of their own
	// cost Redis an EVALSHA per sale), before the WAIT, which then covers
	// them too: no round trip or script of their own.
	pend := l.comps.take()
	t := l.call(a)
	for _, c := range pend {
		t.Marks = append(t.Marks, redisdb.Mark{Term: c.term, Key: c.key})
	}
	ev := redisdb.RunTxn(ctx, l.rdb, l.k, t, func(pipe redis.Pipeliner) {
		if wantWait {
			wait = pipe.Do(ctx, "WAIT", l.cfg.MinReplicasAck, l.cfg.WaitTimeout.Milliseconds())
		}
	})
	res, err := ev.Slice()
	if err != nil {
		// The script did not run (or its answer is lost): its marks go
		// again on their own, off this path.
		if len(pend) > 0 {
			go l.completeAll(pend)
		}
		return nil, err
	}
	acked := int64(-1)
	if wait != nil {
		acked, _ = wait.Int64()
	}
	if res[0] == "ok" && wantWait && acked < int64(l.cfg.MinReplicasAck) {
		l.metrics.waitShortfall.Inc()
	}
	return res, nil
}

// IsTokenForm reports whether a key has the shape of a payment token.
func IsTokenForm(key string) bool {
	return len(key) == 35 && strings.HasPrefix(key, "pt_") && isHex(key[3:])
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// body is the JSON answered for a sale or refund. flow_no comes first so
// the Lua script can put the number it issues in front of the rest.
type body struct {
	FlowNo         string `json:"flow_no"`
	StoreID        string `json:"store_id"`
	TerminalID     string `json:"terminal_id"`
	Kind           string `json:"kind"`
	TotalCents     int64  `json:"total_cents"`
	Tender         string `json:"tender"`
	Lines          []Line `json:"lines"`
	ReceiptNo      string `json:"receipt_no,omitempty"`
	CashierID      string `json:"cashier_id,omitempty"`
	OriginalFlowNo string `json:"original_flow_no,omitempty"`
	CreatedAt      string `json:"created_at"`
	OccurredAt     string `json:"occurred_at"`
}

// rest renders b without its flow number: what follows `{"flow_no":"N",`.
func (b body) rest() string {
	b.FlowNo = ""
	j, _ := json.Marshal(b)
	return strings.TrimPrefix(string(j), `{"flow_no":"",`)
}

func (b body) withFlow(flow string) []byte { return withFlowRest(flow, b.rest()) }

// withFlowRest is the body whose rest (body.rest) is known already: the
// sale path renders it once, for the script and the journal alike.
func withFlowRest(flow, rest string) []byte {
	return []byte(`{"flow_no":"` + flow + `",` + rest)
}

// outcome turns a txn.lua answer into a result or a refusal.
func (l *Ledger) outcome(ctx context.Context, res []any, t journal.Txn) (*Result, error) {
	tag, _ := res[0].(string)
	switch tag {
	case "ok":
		return nil, nil
	case "exists":
		return l.existing(ctx, res, t)
	case "token_invalid":
		return nil, Errorf(KindInvalid, "token_invalid", "the payment token expired unused or was issued to another terminal")
	case "unknown_item":
		return nil, Errorf(KindUnprocessable, "unknown_item", "barcode %v is not in the item master", res[1])
	case "insufficient_stock":
		return nil, Errorf(KindConflict, "insufficient_stock", "not enough stock of %v (%v left)", res[1], res[2])
	case "refund_exceeds_sale":
		return nil, Errorf(KindConflict, "refund_exceeds_sale", "refund of %v exceeds what is left of the sale (%v)", res[1], res[2])
	case "refund_repriced":
		// Priced before another refund of the sale landed: nothing was
		// recorded; the till retries and the daemon prices it afresh.
		return nil, errInProgress()
	case "invalid_amount":
		return nil, Errorf(KindInvalid, "invalid_amount", "%v %v is outside the bounds of a sale", res[1], res[2])
	}
	return nil, fmt.Errorf("txn.lua answered %v", res)
}

// existing handles a key Redis already holds a record for but the journal
// did not (checked before): in flight here, in flight on another daemon,
// completed by another daemon (a till's retry that reached the store's
// other node), or left behind by a crash between the script and the
// journal commit.
func (l *Ledger) existing(ctx context.Context, res []any, t journal.Txn) (*Result, error) {
	state, _ := res[1].(string)
	same, _ := res[2].(int64)
	flow, _ := res[3].(string)
	owner, _ := res[4].(string)
	atStr, _ := res[5].(string)
	oldBody, _ := res[6].(string)
	rz := ""
	if len(res) > 7 {
		rz, _ = res[7].(string)
	}
	if same != 1 {
		return nil, errKeyReused()
	}
	stored, err := recordBody(flow, oldBody, rz)
	if err != nil {
		return nil, err
	}
	if state == "COMPLETED" && l.otherNode(owner) {
		// Marked COMPLETED by the daemon of another node, after its
		// journal commit: that journal holds it, and each journal holds
		// its own node's sales. Answer it; journal nothing here.
		return &Result{Body: stored, FlowNo: flow, Replayed: true}, nil
	}
	at, _ := strconv.ParseInt(atStr, 10, 64)
	if state == "PROCESSING" && owner != l.owner && !l.abandoned(ctx, at) {
		return nil, errInProgress()
	}
	journaled, err := l.journalStored(ctx, t, flow, stored)
	if err != nil {
		return nil, err
	}
	if !journaled {
		return l.byKey(ctx, t.TerminalID, t.IdemKey, t.Fingerprint)
	}
	return &Result{Body: stored, FlowNo: flow, Replayed: true}, nil
}

// journalStored journals a transaction whose effects and result Redis
// holds and the journal lacks: the stored result as it is (mode
// recovered), never applied again; then completes its record. False when
// the journal held the key after all (another call journaled it first).
func (l *Ledger) journalStored(ctx context.Context, t journal.Txn, flow string, stored []byte) (bool, error) {
	t.FlowNo, t.Seq, t.Body, t.Mode, t.Applied = flow, seqOfFlow(flow), stored, journal.ModeRecovered, true
	var b body
	if err := json.Unmarshal(t.Body, &b); err == nil {
		if ct, err := time.Parse(time.RFC3339Nano, b.CreatedAt); err == nil {
			t.CreatedAt = ct
			t.BusinessDay, t.BusinessHour = l.dayHour(ct)
		}
		// Redis counted it on the day and hour of its occurred_at (a batch
		// sale's own moment): the journal files it there too.
		if at, err := time.Parse(time.RFC3339Nano, b.OccurredAt); err == nil {
			t.BusinessDay, t.BusinessHour = l.dayHour(at)
		}
	}
	if err := l.journalAppend(ctx, t); err != nil {
		if errors.Is(err, journal.ErrDuplicateKey) {
			return false, nil
		}
		return false, errJournal(err)
	}
	l.metrics.recovered.Inc()
	l.complete(ctx, t.TerminalID, t.IdemKey)
	return true, nil
}

// abandoned tells whether a PROCESSING record of another owner written at
// atMs (the owner's clock, Unix ms) is left behind by a dead process
// rather than in flight: more than 5 s from now either way, now read from
// Redis's clock, which a jump of this daemon's clock does not move (with
// its own clock a jump forward made a script in flight look abandoned,
// one back made a crash's record look in flight for the whole jump). A
// script in flight is bounded by redis.timeout + wait_timeout; the 5 s
// are the margin for the owner's clock being off Redis's. Redis not
// answering: the daemon's own clock decides, as before.
func (l *Ledger) abandoned(ctx context.Context, atMs int64) bool {
	now := l.now()
	tctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	if t, err := l.rdb.Time(tctx).Result(); err == nil {
		now = t
	}
	age := now.Sub(time.UnixMilli(atMs))
	return age >= 5*time.Second || age <= -5*time.Second
}

func (l *Ledger) journalAppend(ctx context.Context, t journal.Txn) error {
	start := time.Now()
	err := l.j.Append(context.WithoutCancel(ctx), t)
	l.metrics.journalSeconds.Observe(time.Since(start).Seconds())
	if err == nil {
		for {
			cur := l.seqFloor.Load()
			if t.Seq <= cur || l.seqFloor.CompareAndSwap(cur, t.Seq) {
				break
			}
		}
		l.metrics.sales.WithLabelValues(t.Kind, t.Mode).Inc()
	}
	return err
}

// complete marks a journaled record COMPLETED in Redis (and its token).
// Best effort: a record left PROCESSING is recovered from the journal.
func (l *Ledger) complete(ctx context.Context, term, key string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.RedisTimeout)
	defer cancel()
	if err := redisdb.RunComplete(ctx, l.rdb, l.k, term, key, IsTokenForm(key)).Err(); err != nil {
		l.log.Debug("mark idempotency record completed", "terminal", term, "err", err)
	}
}

// completeAll marks journaled records COMPLETED in Redis (and their
// tokens) in one pipeline. A record left PROCESSING is recovered from
// the journal here, and a retry of its key is answered from it; but a
// till's retry on the store's other daemon, 5 s on, would journal it
// there too. So a mark that fails on the link is kept (completions.failed)
// for a later pipeline rather than dropped.
func (l *Ledger) completeAll(cs []completion) {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.RedisTimeout)
	defer cancel()
	pipe := l.rdb.Pipeline()
	for _, c := range cs {
		// Run: a NOSCRIPT (a just-promoted master) is answered in Exec; the
		// mark is then sent again as EVAL below.
		redisdb.RunComplete(ctx, pipe, l.k, c.term, c.key, IsTokenForm(c.key))
	}
	cmds, _ := pipe.Exec(ctx)
	var failed []completion
	var lastErr error
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			if redis.HasErrorPrefix(err, "NOSCRIPT") {
				err = redisdb.RunComplete(ctx, l.rdb, l.k, cs[i].term, cs[i].key, IsTokenForm(cs[i].key)).Err()
			}
			switch markFate(err) {
			case markRefused:
				l.log.Warn("mark idempotency record completed", "terminal", cs[i].term, "err", err)
			case markAgain:
				failed, lastErr = append(failed, cs[i]), err
			}
		}
	}
	if len(failed) > 0 {
		dropped := l.comps.failed(failed)
		l.log.Debug("mark idempotency records completed: kept for the next pipeline", "marks", len(failed), "err", lastErr)
		if dropped > 0 {
			l.log.Warn("idempotency records left PROCESSING in Redis: too many marks waiting (their sales are journaled; a retry on the store's other daemon may journal one there too)",
				"dropped", dropped, "err", lastErr)
		}
	}
}

// markOutcome is what becomes of a COMPLETED mark after its pipeline.
type markOutcome int

const (
	markDone    markOutcome = iota // marked, or the record is gone
	markDropped                    // the client is closed: shutting down; the next start-up scan marks this node's journaled records
	markRefused                    // Redis refused it for good (a key of another type?): sent again inside the next sale's script, it would fail that sale too
	markAgain                      // the link failed (timed out, reset, Redis down) or Redis said "not now" (READONLY, LOADING, BUSY…): kept for the next pipeline
)

// markFate sorts the error of one mark, by the rule the rest of the
// daemon uses for "Redis is out of reach" (redisdb.IsUnavailable).
func markFate(err error) markOutcome {
	switch {
	case err == nil, errors.Is(err, redis.Nil):
		return markDone
	case errors.Is(err, redis.ErrClosed):
		return markDropped
	case redisdb.IsUnavailable(err):
		return markAgain
	}
	return markRefused
}

func (l *Ledger) dayHour(t time.Time) (string, string) {
	return businessday.DayHour(t, l.cfg.Location)
}
