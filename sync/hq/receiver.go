package hq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/natsurl"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// ConsumerName is the durable pull consumer every posedge-hq process
// shares: JetStream hands each message to one of them.
const ConsumerName = "posedge-hq"

// HaveQueue is the queue group posedge-hq processes answer the stores'
// "what do you hold" requests in.
const HaveQueue = "posedge-hq"

const (
	// storeTimeout bounds one batch's database transaction; a batch is
	// finished even when the receiver is asked to stop meanwhile.
	storeTimeout = 60 * time.Second
	// poisonDeliveries is how often a message that the database refuses
	// on its own (while it answers otherwise) is delivered before it is
	// terminated.
	poisonDeliveries = 10
	// maxHaveFlows bounds one "what do you hold" request.
	maxHaveFlows = 10000
	// lingerNext is how long a batch waits for one more message once
	// the client-side buffer is empty.
	lingerNext = 2 * time.Millisecond
)

// Receiver consumes the stream and stores each message once. Create it
// with NewReceiver and call Run.
type Receiver struct {
	cfg     Config
	store   hqdb.Store
	metrics *Metrics
	log     *slog.Logger
	name    string // NATS connection name

	haveLimit *storeWindows
	view      *streamView // the have query's look at the stream (pending.go)

	conn    atomic.Pointer[nats.Conn]
	ready   atomic.Bool // stream and consumer exist
	cons    atomic.Pointer[jetstream.Consumer]
	batches atomic.Int64
}

// NewReceiver returns a receiver storing into store. name tells the
// process apart in NATS monitoring ("" is "posedge-hq").
func NewReceiver(cfg Config, store hqdb.Store, metrics *Metrics, log *slog.Logger, name string) *Receiver {
	if name == "" {
		name = "posedge-hq"
	}
	return &Receiver{cfg: cfg, store: store, metrics: metrics, log: log, name: name,
		haveLimit: &storeWindows{limit: haveLimitPerStore, window: haveLimitWindow, used: map[string]*storeWindow{}},
		view:      &streamView{}}
}

// have requests a store may make per window, per posedge-hq process:
// a store's replay asks once per batch it must confirm; 600 a minute (10
// a second, each of at most maxHaveFlows numbers) covers a fast backlog
// drain and bounds the database load one store's credentials can cause.
const (
	haveLimitPerStore = 600
	haveLimitWindow   = time.Minute
)

// storeWindows counts requests per store in fixed windows.
type storeWindows struct {
	limit  int
	window time.Duration
	mu     sync.Mutex
	used   map[string]*storeWindow
}

type storeWindow struct {
	start time.Time
	n     int
}

func (s *storeWindows) allow(store string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.used[store]
	if w == nil || now.Sub(w.start) >= s.window {
		w = &storeWindow{start: now}
		s.used[store] = w
	}
	if w.n >= s.limit {
		return false
	}
	w.n++
	return true
}

// Ready says why the receiver is not yet consuming, or nil.
func (r *Receiver) Ready() error {
	nc := r.conn.Load()
	switch {
	case nc == nil:
		return errors.New("NATS: not started")
	case !nc.IsConnected():
		return fmt.Errorf("NATS: not connected to %s (%s)", natsurl.Redact(r.cfg.NATSURL), nc.Status())
	case !r.ready.Load():
		return fmt.Errorf("NATS: stream %s or consumer %s not set up yet", r.cfg.Stream, ConsumerName)
	}
	return nil
}

// consumer is the durable consumer once set up, or nil.
func (r *Receiver) consumer() jetstream.Consumer {
	if c := r.cons.Load(); c != nil {
		return *c
	}
	return nil
}

// Run connects to NATS, creates the stream if missing, answers "have"
// requests and stores batches until ctx is done. A batch being stored
// when ctx is cancelled is committed and acked; nothing fetched after
// is acked, so JetStream redelivers it.
func (r *Receiver) Run(ctx context.Context) error {
	nc, err := r.connect()
	if err != nil {
		return err
	}
	r.conn.Store(nc)
	defer nc.Close()

	sub, err := nc.QueueSubscribe(wire.HaveSubjectPrefix+".*", HaveQueue, r.haveHandler(ctx))
	if err != nil {
		return fmt.Errorf("subscribe %s.*: %w", wire.HaveSubjectPrefix, err)
	}
	defer sub.Unsubscribe()
	dsub, err := nc.QueueSubscribe(wire.DeliverSubjectPrefix+".*", HaveQueue, r.deliverHandler(ctx))
	if err != nil {
		return fmt.Errorf("subscribe %s.*: %w", wire.DeliverSubjectPrefix, err)
	}
	defer dsub.Unsubscribe()

	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	wait := backoff()
	for ctx.Err() == nil {
		cons, err := r.setup(ctx, js)
		if err != nil {
			d := wait()
			switch {
			case ctx.Err() != nil:
			case clusterNotReady(err):
				r.log.Warn("JetStream cluster not ready (no meta leader yet, or too few servers up for stream_replicas); waiting",
					"stream", r.cfg.Stream, "stream_replicas", r.cfg.StreamReplicas, "retry_in", d.Round(time.Millisecond), "err", err)
			default:
				r.log.Warn("JetStream not ready; retrying", "stream", r.cfg.Stream, "retry_in", d.Round(time.Millisecond), "err", err)
			}
			sleep(ctx, d)
			continue
		}
		r.ready.Store(true)
		r.cons.Store(&cons)
		wait = backoff()
		err = r.consume(ctx, cons)
		r.ready.Store(false)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("consumer stopped; setting up again", "err", err)
			sleep(ctx, wait())
		}
	}
	r.log.Info("receiver stopped", "batches", r.batches.Load())
	return nil
}

func (r *Receiver) connect() (*nats.Conn, error) {
	return connectNATS(r.cfg, r.name, r.log)
}

// connectNATS dials cfg's NATS with its credentials and TLS, retrying
// and reconnecting for ever; name tells the connection apart.
func connectNATS(cfg Config, name string, log *slog.Logger) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(time.Second),
		nats.ReconnectJitter(500*time.Millisecond, 2*time.Second),
		// A cluster server that hangs keeps its socket open: only missed
		// pings tell, within 30 s rather than the client's default 4 min.
		nats.PingInterval(10 * time.Second),
		nats.MaxPingsOutstanding(3),
		nats.ConnectHandler(func(nc *nats.Conn) {
			log.Info("NATS connected", "url", nc.ConnectedUrlRedacted())
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil { // nil: closed on purpose
				log.Warn("NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			log.Warn("NATS error", "subject", subj, "err", err)
		}),
	}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.TLS.CAFile != "" {
		opts = append(opts, nats.RootCAs(cfg.TLS.CAFile))
	}
	if cfg.TLS.CertFile != "" {
		opts = append(opts, nats.ClientCert(cfg.TLS.CertFile, cfg.TLS.KeyFile))
	}
	nc, err := nats.Connect(cfg.NATSURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to NATS %s: %w", natsurl.Redact(cfg.NATSURL), err)
	}
	return nc, nil
}

// clusterNotReady tells the errors of a JetStream cluster that is still
// forming or has lost its quorum (no meta leader, peers not yet known)
// from those of a wrong setup: they pass once the cluster is whole.
func clusterNotReady(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jsErrClusterNotAvailable, jsErrClusterNoPeers, jsErrInsufficientResources, jetstream.JSErrCodeJetStreamNotEnabled:
			return true
		}
	}
	// With no meta leader, API requests may go unanswered.
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled)
}

// JetStream API error codes (nats-server's errors.json) that nats.go
// does not name.
const (
	jsErrClusterNoPeers        jetstream.ErrorCode = 10005 // "no suitable peers for placement"
	jsErrClusterNotAvailable   jetstream.ErrorCode = 10008 // "JetStream system temporarily unavailable"
	jsErrInsufficientResources jetstream.ErrorCode = 10023
)

// scaleUp raises the replicas of an existing stream to stream_replicas.
// It never lowers them: fewer copies is a decision for an operator
// (nats stream edit), not a side effect of a config file. A refusal is
// logged and the stream used as it is.
func (r *Receiver) scaleUp(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig) {
	have := max(sc.Replicas, 1)
	switch {
	case have == r.cfg.StreamReplicas:
		return
	case have > r.cfg.StreamReplicas:
		r.log.Info("existing stream keeps its replicas (more than stream_replicas; never lowered by posedge-hq)",
			"stream", r.cfg.Stream, "stream_replicas_now", have, "stream_replicas", r.cfg.StreamReplicas)
		return
	}
	sc.Replicas = r.cfg.StreamReplicas
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		r.log.Warn("could not raise the stream's replicas; using it as it is (is the cluster big enough and whole?)",
			"stream", r.cfg.Stream, "from", have, "to", r.cfg.StreamReplicas, "err", err)
		return
	}
	r.log.Info("stream replicas raised to stream_replicas; JetStream copies the stream to the new peers in the background",
		"stream", r.cfg.Stream, "from", have, "to", r.cfg.StreamReplicas)
}

// StreamConfig is the stream posedge-hq creates: a transport buffer, as
// every row stays in its store's journal until HQ confirms storing it
// (docs/hq-sync.md, "Stream limits"). Limits retention keeps what HQ
// read for stream_max_age, readable by operators; a publish past a limit
// is refused (DiscardNew), never let in by pushing out older messages
// that may be unread, and per subject (DiscardNewPerSubject), so that a
// store over its cap is refused while the others still publish.
func (c Config) StreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:                 c.Stream,
		Description:          "posedge sales and refunds replayed by the stores",
		Subjects:             []string{c.SubjectPrefix + ".>"},
		Storage:              jetstream.FileStorage,
		Retention:            jetstream.LimitsPolicy,
		Duplicates:           c.DuplicateWindow,
		Replicas:             c.StreamReplicas,
		MaxAge:               c.StreamMaxAge,
		MaxBytes:             c.StreamMaxBytes,
		MaxMsgsPerSubject:    c.StreamMaxMsgsPerSubject,
		MaxMsgs:              -1,
		MaxConsumers:         -1,
		MaxMsgSize:           -1,
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
	}
}

// limit gives an existing stream the configured limits and discard
// policy, which JetStream can change in place, and returns its config.
// Its retention it cannot change to or from work queue, nor its storage:
// those are logged and kept. Lowered limits make JetStream drop the
// oldest messages over them, maybe unread: the stores send those again,
// as HQ's confirmation lacks them.
func (r *Receiver) limit(ctx context.Context, js jetstream.JetStream, sc jetstream.StreamConfig) jetstream.StreamConfig {
	want := r.cfg.StreamConfig()
	if sc.Retention != want.Retention {
		r.log.Warn("existing stream keeps its own retention (JetStream cannot change it here); recreate the stream to get limits retention, stores resend what HQ lacks",
			"stream", r.cfg.Stream, "retention", sc.Retention.String(), "want", want.Retention.String())
	}
	if sc.Storage != want.Storage {
		r.log.Warn("existing stream keeps its own storage (JetStream cannot change it)",
			"stream", r.cfg.Stream, "storage", sc.Storage.String(), "want", want.Storage.String())
	}
	if sc.MaxAge == want.MaxAge && sc.MaxBytes == want.MaxBytes && sc.MaxMsgsPerSubject == want.MaxMsgsPerSubject &&
		sc.Discard == want.Discard && sc.DiscardNewPerSubject == want.DiscardNewPerSubject {
		return sc
	}
	up := sc
	up.MaxAge, up.MaxBytes, up.MaxMsgsPerSubject = want.MaxAge, want.MaxBytes, want.MaxMsgsPerSubject
	up.Discard, up.DiscardNewPerSubject = want.Discard, want.DiscardNewPerSubject
	if up.Duplicates > up.MaxAge {
		up.Duplicates = want.Duplicates // JetStream wants the window within max age
	}
	info, err := js.UpdateStream(ctx, up)
	if err != nil {
		r.log.Warn("could not give the existing stream its limits; using it as it is",
			"stream", r.cfg.Stream, "max_age", want.MaxAge, "max_bytes", want.MaxBytes,
			"max_msgs_per_subject", want.MaxMsgsPerSubject, "err", err)
		return sc
	}
	r.log.Info("existing stream given the configured limits, discard new per subject",
		"stream", r.cfg.Stream, "max_age", want.MaxAge, "was_max_age", sc.MaxAge, "max_bytes", want.MaxBytes,
		"was_max_bytes", sc.MaxBytes, "max_msgs_per_subject", want.MaxMsgsPerSubject, "was_max_msgs_per_subject", sc.MaxMsgsPerSubject,
		"discard", want.Discard.String(), "was_discard", sc.Discard.String())
	return info.CachedInfo().Config
}

// setup creates the stream when missing and the durable consumer.
func (r *Receiver) setup(ctx context.Context, js jetstream.JetStream) (jetstream.Consumer, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	subjects := r.cfg.SubjectPrefix + ".>"
	st, err := js.Stream(ctx, r.cfg.Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		_, err = js.CreateStream(ctx, r.cfg.StreamConfig())
		switch {
		case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
			// Another posedge-hq created it meanwhile, maybe with fewer
			// replicas.
			if st, err = js.Stream(ctx, r.cfg.Stream); err != nil {
				return nil, fmt.Errorf("look up stream %s: %w", r.cfg.Stream, err)
			}
			r.scaleUp(ctx, js, r.limit(ctx, js, st.CachedInfo().Config))
		case err != nil:
			return nil, fmt.Errorf("create stream %s with %d replicas, stream_max_bytes %d: %w (is the NATS server's jetstream max_file_store at least stream_max_bytes?)",
				r.cfg.Stream, r.cfg.StreamReplicas, r.cfg.StreamMaxBytes, err)
		default:
			r.log.Info("stream created", "stream", r.cfg.Stream, "subjects", subjects, "duplicate_window", r.cfg.DuplicateWindow,
				"replicas", r.cfg.StreamReplicas, "max_age", r.cfg.StreamMaxAge, "max_bytes", r.cfg.StreamMaxBytes,
				"max_msgs_per_subject", r.cfg.StreamMaxMsgsPerSubject)
		}
	case err != nil:
		return nil, fmt.Errorf("look up stream %s: %w", r.cfg.Stream, err)
	default:
		sc := st.CachedInfo().Config
		if !containsSubject(sc.Subjects, subjects) {
			r.log.Warn("existing stream does not capture the configured subjects", "stream", r.cfg.Stream,
				"stream_subjects", sc.Subjects, "subject_prefix", r.cfg.SubjectPrefix)
		}
		if sc.Duplicates != r.cfg.DuplicateWindow {
			r.log.Info("existing stream keeps its own duplicate window", "stream", r.cfg.Stream,
				"stream_duplicates", sc.Duplicates, "duplicate_window", r.cfg.DuplicateWindow)
		}
		r.scaleUp(ctx, js, r.limit(ctx, js, sc))
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, r.cfg.Stream, jetstream.ConsumerConfig{
		Durable:       ConsumerName,
		Description:   "posedge-hq processes sharing the load",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       r.cfg.AckWait,
		MaxDeliver:    -1,
		MaxAckPending: 8 * r.cfg.BatchSize,
		FilterSubject: subjects,
	})
	if err != nil {
		return nil, fmt.Errorf("create consumer %s on %s: %w", ConsumerName, r.cfg.Stream, err)
	}
	return cons, nil
}

func containsSubject(have []string, want string) bool {
	for _, s := range have {
		if s == want || s == ">" {
			return true
		}
	}
	return false
}

// consume stores batches until ctx is done or the iterator fails. One
// goroutine pulls and decodes the next batch while this one commits the
// current batch, so the network and the database work at the same time.
func (r *Receiver) consume(ctx context.Context, cons jetstream.Consumer) error {
	it, err := cons.Messages(jetstream.PullMaxMessages(2 * r.cfg.BatchSize))
	if err != nil {
		return fmt.Errorf("pull from %s: %w", ConsumerName, err)
	}
	defer it.Stop()
	fctx, stopFetching := context.WithCancel(ctx)
	defer stopFetching()
	batches := make(chan decoded, 1)
	fetchErr := make(chan error, 1)
	go func() {
		defer close(batches)
		fetchErr <- r.fetch(fctx, it, batches)
	}()
	for b := range batches {
		if ctx.Err() != nil {
			// Fetched but not stored: hand them back at once rather than
			// after ack_wait, so another posedge-hq can take them.
			for _, jm := range b.jms {
				_ = jm.Nak()
			}
			continue
		}
		r.store1(ctx, b)
	}
	if err := <-fetchErr; err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// decoded is one batch pulled from the stream and decoded; the
// messages that could never be stored are already terminated.
type decoded struct {
	msgs []hqdb.Msg
	jms  []jetstream.Msg
}

// fetch pulls and decodes batches into out until ctx is done or the
// iterator is closed.
func (r *Receiver) fetch(ctx context.Context, it jetstream.MessagesContext, out chan<- decoded) error {
	for {
		batch, err := r.collect(ctx, it)
		if b := r.decode(batch); len(b.msgs) > 0 {
			select {
			case out <- b:
			case <-ctx.Done():
				for _, jm := range b.jms {
					_ = jm.Nak()
				}
			}
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, jetstream.ErrMsgIteratorClosed):
			return err
		case err != nil:
			r.log.Warn("pull", "err", err)
		}
	}
}

// collect waits for one message, then takes what else is already there,
// up to batch_size.
func (r *Receiver) collect(ctx context.Context, it jetstream.MessagesContext) ([]jetstream.Msg, error) {
	m, err := it.Next(jetstream.NextContext(ctx))
	if err != nil {
		return nil, err
	}
	batch := []jetstream.Msg{m}
	for len(batch) < r.cfg.BatchSize && ctx.Err() == nil {
		m, err := it.Next(jetstream.NextMaxWait(lingerNext))
		if errors.Is(err, nats.ErrTimeout) {
			break
		}
		if err != nil {
			return batch, err
		}
		batch = append(batch, m)
	}
	return batch, nil
}

// decode decodes a batch, terminating what can never be stored.
func (r *Receiver) decode(batch []jetstream.Msg) decoded {
	msgs, errs := make([]hqdb.Msg, len(batch)), make([]error, len(batch))
	decodeBatch(batch, r.cfg.SubjectPrefix, r.cfg.MaxSaleCents, time.Now(), msgs, errs)
	// Keep the storable ones, in order, in the same arrays: batch is
	// this call's own (collect's), so its slots can be reused for jms.
	kept := 0
	for i, err := range errs {
		if err != nil {
			r.terminate(batch[i], err)
			continue
		}
		if kept != i {
			msgs[kept], batch[kept] = msgs[i], batch[i]
		}
		kept++
	}
	clear(msgs[kept:]) // no reference kept to what was terminated
	return decoded{msgs: msgs[:kept], jms: batch[:kept]}
}

// store1 stores one batch in one transaction and acks it after the commit.
func (r *Receiver) store1(ctx context.Context, b decoded) {
	msgs, keep := b.msgs, b.jms
	// The batch is finished even when ctx is cancelled meanwhile: what
	// was fetched is committed and acked, or neither.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
	defer cancel()
	start := time.Now()
	outs, err := r.store.InsertBatch(sctx, msgs)
	if err != nil {
		r.metrics.batchErrs.Inc()
		r.log.Error("store batch", "messages", len(msgs), "err", err)
		r.storeEach(ctx, msgs, keep)
		return
	}
	r.metrics.commit.Observe(time.Since(start).Seconds())
	r.batches.Add(1)
	for i, jm := range keep {
		r.done(jm, &msgs[i], outs[i])
	}
}

// done counts, logs and acks one stored message.
func (r *Receiver) done(jm jetstream.Msg, m *hqdb.Msg, o hqdb.Outcome) {
	r.done1(m, o)
	if err := jm.Ack(); err != nil {
		// It was committed: the redelivery is a duplicate.
		r.log.Debug("ack", "subject", jm.Subject(), "err", err)
	}
}

// done1 counts and logs one stored message, however it came.
func (r *Receiver) done1(m *hqdb.Msg, o hqdb.Outcome) {
	r.metrics.outcome(m.Kind, o)
	if o == hqdb.Conflict {
		r.log.Warn("conflict: a different transaction is stored under this flow number; kept in the conflicts table",
			"store_id", m.StoreID, "flow_no", m.Txn.FlowNo, "terminal_id", m.Txn.TerminalID)
	}
	if o == hqdb.Quarantined {
		reason, detail := m.Quarantine, m.QuarantineDetail
		if reason == "" { // InsertBatch found the day totals full
			reason, detail = hqdb.QuarantineDayOverflow, hqdb.DayOverflowDetail(m)
		}
		r.metrics.quarantined.WithLabelValues(reason).Inc()
		r.log.Error("transaction quarantined: kept in the quarantine table, neither stored nor counted (GET /v1/stores/{store_id}/quarantine)",
			"store_id", m.StoreID, "flow_no", m.Txn.FlowNo, "terminal_id", m.Txn.TerminalID, "reason", reason, "detail", detail)
	}
}

// storeEach stores a failed batch message by message, so that one
// message the database refuses cannot hold back the others.
func (r *Receiver) storeEach(ctx context.Context, msgs []hqdb.Msg, batch []jetstream.Msg) {
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	perr := r.store.Ping(pctx)
	cancel()
	if perr != nil {
		// The database is down: let JetStream redeliver later.
		r.log.Error("database unavailable", "err", perr)
		for _, jm := range batch {
			_ = jm.NakWithDelay(r.nakDelay())
		}
		sleep(ctx, r.nakDelay())
		return
	}
	var failed []int
	for i := range msgs {
		if ctx.Err() != nil {
			return
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeTimeout)
		outs, err := r.store.InsertBatch(sctx, msgs[i:i+1])
		cancel()
		if err != nil {
			failed = append(failed, i)
			r.log.Error("store message", "subject", batch[i].Subject(), "err", err)
			continue
		}
		r.done(batch[i], &msgs[i], outs[0])
	}
	for _, i := range failed {
		md, err := batch[i].Metadata()
		if err == nil && md.NumDelivered >= poisonDeliveries {
			r.terminate(batch[i], &RejectError{Reason: "unstorable", Err: fmt.Errorf("refused by the database %d times", md.NumDelivered)})
			continue
		}
		_ = batch[i].NakWithDelay(r.nakDelay())
	}
}

// nakDelay is how long JetStream waits before redelivering a message
// the database refused: a tenth of ack_wait, within 100 ms to 5 s.
func (r *Receiver) nakDelay() time.Duration {
	return min(max(r.cfg.AckWait/10, 100*time.Millisecond), 5*time.Second)
}

// terminate tells JetStream never to redeliver a message that cannot be
// stored.
func (r *Receiver) terminate(jm jetstream.Msg, err error) {
	reason := reasonInvalid
	var re *RejectError
	if errors.As(err, &re) {
		reason = re.Reason
	}
	r.metrics.rejected.WithLabelValues(reason).Inc()
	seq := uint64(0)
	if md, merr := jm.Metadata(); merr == nil {
		seq = md.Sequence.Stream
	}
	r.log.Error("message rejected for good", "subject", jm.Subject(), "msg_id", jm.Headers().Get(wire.HeaderMsgID),
		"stream_seq", seq, "reason", reason, "err", err)
	if terr := jm.TermWithReason(reason); terr != nil {
		r.log.Warn("term", "subject", jm.Subject(), "err", terr)
	}
}

// haveHandler answers wire.HaveRequest on posedge.hq.have.<store>.
func (r *Receiver) haveHandler(ctx context.Context) nats.MsgHandler {
	return func(m *nats.Msg) {
		reply := wire.HaveReply{Have: []string{}}
		result := "ok"
		storeID := strings.TrimPrefix(m.Subject, wire.HaveSubjectPrefix+".")
		var req wire.HaveRequest
		switch err := json.Unmarshal(m.Data, &req); {
		case err != nil:
			reply.Error, result = "invalid request: "+err.Error(), "invalid"
		case !validStoreID(storeID):
			reply.Error, result = "invalid store ID in subject", "invalid"
		case req.StoreID != "" && req.StoreID != storeID:
			reply.Error, result = fmt.Sprintf("store_id %q asked on the subject of %s", req.StoreID, storeID), "invalid"
		case len(req.FlowNos) > maxHaveFlows:
			reply.Error, result = fmt.Sprintf("at most %d flow numbers per request", maxHaveFlows), "invalid"
		case len(req.Seqs) > 0 && len(req.Seqs) != len(req.FlowNos):
			reply.Error, result = fmt.Sprintf("%d seqs for %d flow numbers", len(req.Seqs), len(req.FlowNos)), "invalid"
		case !r.haveLimit.allow(storeID, time.Now()):
			// One store's credentials must not load HQ's database (issue
			// 22 finding 6); posedge asks a few times a minute.
			reply.Error, result = fmt.Sprintf("at most %d have requests per store in %v; retry later", haveLimitPerStore, haveLimitWindow), "limited"
		default:
			var pos streamPos
			if len(req.Seqs) > 0 {
				pos = r.streamPos(ctx) // before the database: see streamPos
			}
			qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			have, err := r.store.Have(qctx, storeID, req.FlowNos)
			cancel()
			if err != nil {
				r.log.Error("have", "store_id", storeID, "err", err)
				reply.Error, result = "database unavailable", "error"
			} else {
				reply.Have = have
				if len(req.Seqs) > 0 {
					reply.Pending = pos.pendingOf(req.FlowNos, req.Seqs, have)
				}
			}
		}
		if m.Reply == "" {
			r.metrics.haveReqs.WithLabelValues(result).Inc()
			return
		}
		if !replyOfStore(m.Reply, storeID) {
			// A confused deputy otherwise: HQ's user may publish where the
			// store may not (issue 22 finding 4, a reply aimed at
			// $KV.POS_CATALOG.… overwrote a catalog key).
			r.metrics.haveReqs.WithLabelValues("foreign_reply").Inc()
			r.log.Warn("have: reply subject outside the store's inbox; not answered", "store_id", storeID, "reply", m.Reply)
			return
		}
		r.metrics.haveReqs.WithLabelValues(result).Inc()
		data, _ := json.Marshal(reply)
		if err := m.Respond(data); err != nil {
			r.log.Warn("have: reply", "store_id", storeID, "err", err)
		}
	}
}

// replyOfStore says whether HQ may answer a request of storeID on reply:
// under the store's own inbox (_INBOX.<store>.…, the per-store template
// lets the store read nothing else), or a reply subject the server made
// for a service import (_R_.…, the two-account template of
// docs/security.md; clients cannot publish with such a reply, the server
// routes the answer back to the asking store's account). Anything else
// is a subject the store picked for HQ to write to.
func replyOfStore(reply, storeID string) bool {
	return strings.HasPrefix(reply, wire.InboxPrefix(storeID)+".") || strings.HasPrefix(reply, "_R_.")
}

// backoff returns successive waits: exponential from 250 ms, capped at
// 15 s, with jitter.
func backoff() func() time.Duration {
	d := 250 * time.Millisecond
	return func() time.Duration {
		w := d/2 + rand.N(d/2+1)
		d = min(2*d, 15*time.Second)
		return w
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
