package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/posedge/posedge/edge/redisdb"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// ErrInvalidTerminalID is returned, before anything reaches Redis, for a
// terminal id outside [A-Za-z0-9_-]{1,32}.
var ErrInvalidTerminalID = errors.New("invalid terminal id: must match [A-Za-z0-9_-]{1,32}")

// ErrUnknownAction is returned, before anything reaches Redis, for an
// action other than "", scan, pay, refund and sync.
var ErrUnknownAction = errors.New("unknown rate-limit action (known: scan, pay, refund, sync)")

// Metric level labels; the action label is the request's action or "none".
const (
	levelStore     = "store"
	levelTerminal  = "terminal"
	levelAction    = "action"
	levelStoreSync = "store_sync"
	noAction       = "none"
)

// probeEvery is how often, while on the local limiter, one background
// PING asks whether Redis answers again.
const probeEvery = time.Second

// level is one sliding window of a decision.
type level struct {
	name     string // policy name in the headers: store, terminal or the action
	metric   string // level label of the metrics
	key      string // Redis key, also the key of the local limiter
	pol      Policy
	scale    string // "" or the action name a promotion's actions list may name
	fallback int    // limit of the local limiter
}

// Limiter decides requests of one store. It is safe for concurrent use.
//
// Redis keys (edge/redisdb's Keys: RateStore, RateTerminal, RateAction,
// RateSync and Promo) carry the store's hash tag, which keeps them in one
// Redis Cluster slot, so the script may touch them together.
//
// Memory bound: each hit log is a sorted set (score: Redis time in µs)
// holding at most its scaled limit of members, because denied requests are
// recorded nowhere (more only within one window after a promotion that
// raised the limit ends), and it expires one window after its last hit.
// A terminal at the contract's limits holds at most 178 hits in five keys,
// about 5.9 KB of Redis memory (listpack encoding); under coefficient 10,
// 1780 hits, about 200 KB. Limiter keys must never be evicted in place of
// money data: Redis runs with a maxmemory-policy other than allkeys-*.
//
// Fallback: the local limiter of each daemon allows FallbackFraction of
// every unscaled limit (no promotion), so two daemons sharing a store may
// together allow twice that.
type Limiter struct {
	rdb      redis.UniversalClient
	cfg      Config
	log      *slog.Logger
	k        redisdb.Keys
	promoKey string
	store    level
	sync     level
	syncPlan *plan
	plans    plans
	nonce    string
	seq      atomic.Uint64
	hold     time.Duration // longest window: how long to stay local after Redis returns
	direct   bool          // the client honours context deadlines itself
	m        *metrics
	local    *localLimiter
	fb       fallbackState
}

// Decision is the outcome of one request, for the tightest level.
type Decision struct {
	Allowed   bool
	Policy    string // name of the tightest level for the headers: "store", "terminal", or the action name
	Limit     int    // scaled limit of that level
	Window    time.Duration
	Remaining int
	Reset     time.Duration // time until a slot frees in that level
	Fallback  bool          // decided by the local fallback limiter
}

// New returns a limiter for cfg (defaults applied, then validated) on rdb.
// Metrics are registered on reg unless it is nil; log may be nil.
func New(rdb redis.UniversalClient, cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Limiter, error) {
	if rdb == nil {
		return nil, errors.New("rate limiter: nil Redis client")
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rate limiter config: %w", err)
	}
	if cfg.RedisTimeout == 0 {
		return nil, errors.New("rate limiter config: RedisTimeout unset (the daemon passes redis.timeout)")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var nb [6]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return nil, fmt.Errorf("rate limiter nonce: %w", err)
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("rate limiter metrics: %w", err)
	}
	l := &Limiter{
		rdb:   rdb,
		cfg:   cfg,
		log:   log.With("component", "ratelimit", "store_id", cfg.StoreID),
		k:     redisdb.NewKeys(cfg.StoreID),
		nonce: hex.EncodeToString(nb[:]) + ".",
		m:     m,
	}
	if o, ok := rdb.(interface{ Options() *redis.Options }); ok && o.Options().ContextTimeoutEnabled {
		l.direct = true
	}
	l.promoKey = l.k.Promo()
	l.store = l.newLevel(levelStore, "store", l.k.RateStore(), cfg.Store, "")
	l.sync = l.newLevel(levelStoreSync, ActionSync, l.k.RateSync(), cfg.Actions[ActionSync], ActionSync)
	l.syncPlan = l.newPlan([]level{l.sync}, ActionSync)
	l.hold = max(cfg.Store.Window, cfg.Terminal.Window)
	for _, p := range cfg.Actions {
		l.hold = max(l.hold, p.Window)
	}
	l.local = newLocalLimiter(l.hold)
	return l, nil
}

func (l *Limiter) newLevel(metric, name, key string, p Policy, scale string) level {
	return level{name: name, metric: metric, key: key, pol: p, scale: scale,
		fallback: fraction(p.Limit, l.cfg.FallbackFraction)}
}

// Allow decides and charges one request of terminalID. action is one of
// scan, pay, refund, sync, or "" for endpoints limited at the store and
// terminal levels only. Every level is decided in one script call on Redis
// time; the request is charged at every level only when all allow it.
// When Redis does not answer within Config.RedisTimeout the local limiter
// decides (Decision.Fallback). The error is non-nil only for an invalid
// terminal id or action (nothing reaches Redis) or when ctx ends.
func (l *Limiter) Allow(ctx context.Context, terminalID, action string) (Decision, error) {
	d, _, err := l.AllowRead(ctx, terminalID, action, nil)
	return d, err
}

// Read queues read-only commands into the round trip of a decision (see
// redisdb.Read). The limiter knows nothing of the keys read: the
// caller's package owns their layout.
type Read = redisdb.Read

// AllowRead is Allow with read in the same Redis round trip as the
// decision: one round trip for a request that needs both. The returned
// reply is that of read's last attempt, or the zero Reply when the decision
// was not made on Redis (the local limiter decided, or Redis failed and
// the local limiter took over): then the caller reads by itself.
func (l *Limiter) AllowRead(ctx context.Context, terminalID, action string, read Read) (Decision, redisdb.Reply, error) {
	if !validID(terminalID) {
		return Decision{}, redisdb.Reply{}, fmt.Errorf("rate limit %q: %w", terminalID, ErrInvalidTerminalID)
	}
	if action != "" && !knownAction(action) {
		return Decision{}, redisdb.Reply{}, fmt.Errorf("rate limit action %q: %w", action, ErrUnknownAction)
	}
	return l.decide(ctx, l.plan(terminalID, action), read)
}

// AllowStoreSync decides and charges one hit of the store-wide replay
// `sync` key (policy limits.actions.sync), shared by every daemon of the
// store and separate from the terminals' sync keys and from the store and
// terminal levels. A promotion scales it as it scales the terminals' sync
// level.
func (l *Limiter) AllowStoreSync(ctx context.Context) (Decision, error) {
	d, _, err := l.decide(ctx, l.syncPlan, nil)
	return d, err
}

// WaitStoreSync blocks until AllowStoreSync allows (and so charges) one
// hit, or ctx ends.
func (l *Limiter) WaitStoreSync(ctx context.Context) error {
	for {
		d, err := l.AllowStoreSync(ctx)
		if err != nil {
			return err
		}
		if d.Allowed {
			return nil
		}
		t := time.NewTimer(max(d.Reset, 10*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("wait for the store sync budget: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// Denied is how many requests the limiter denied since it started.
func (l *Limiter) Denied() uint64 { return l.m.denied.Load() }

// FallbackActive reports whether the local limiter decides, because Redis
// did not answer or answered again less than one window ago.
func (l *Limiter) FallbackActive() bool { return l.fb.active.Load() }

func (l *Limiter) decide(ctx context.Context, p *plan, read Read) (Decision, redisdb.Reply, error) {
	start := time.Now()
	lv := p.lv
	var (
		d     Decision
		idx   int
		reply redisdb.Reply
		err   error
	)
	if l.useLocal() {
		d, idx = l.local.decide(l.cfg.Now(), lv)
	} else {
		d, idx, reply, err = l.remote(ctx, p, read)
		if err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return Decision{}, redisdb.Reply{}, fmt.Errorf("rate limit: %w", cerr)
			}
			l.enterFallback(err)
			d, idx = l.local.decide(l.cfg.Now(), lv)
			reply = redisdb.Reply{}
		}
	}
	l.m.observe(d, lv[idx].metric, p.label, time.Since(start))
	return d, reply, nil
}

// member is unique across daemons (random nonce) and requests (sequence).
func (l *Limiter) member() string {
	var b [48]byte
	return string(strconv.AppendUint(append(b[:0], l.nonce...), l.seq.Add(1), 36))
}

// remote decides on Redis; with read, in the same round trip
// (redisdb.RunRateLimit).
func (l *Limiter) remote(ctx context.Context, p *plan, read Read) (Decision, int, redisdb.Reply, error) {
	lv := p.lv
	member := l.member()
	var (
		res   []int64
		reply redisdb.Reply
	)
	// res and reply are read only after fn returned nil: when withDeadline
	// gives up on a goroutine, that goroutine's late writes are never read.
	err := l.withDeadline(ctx, func(ctx context.Context) error {
		r, rp, err := p.call.Run(ctx, l.rdb, member, read)
		res, reply = r, rp
		return err
	})
	if err != nil {
		return Decision{}, 0, redisdb.Reply{}, fmt.Errorf("ratelimit.lua: %w", err)
	}
	if len(res) != 5 || res[1] < 1 || int(res[1]) > len(lv) {
		return Decision{}, 0, redisdb.Reply{}, fmt.Errorf("ratelimit.lua: unexpected reply %v", res)
	}
	i := int(res[1]) - 1
	return Decision{
		Allowed:   res[0] == 1,
		Policy:    lv[i].name,
		Limit:     int(res[2]),
		Window:    lv[i].pol.Window,
		Remaining: int(res[3]),
		Reset:     time.Duration(res[4]) * time.Millisecond,
	}, i, reply, nil
}

// withDeadline runs fn with Config.RedisTimeout as deadline. go-redis
// ignores context deadlines unless the client was built with
// ContextTimeoutEnabled (a *redis.Client or failover client with it is
// called directly, the cheapest path); for any other client fn runs in a
// goroutine and withDeadline returns when the deadline passes, the call
// ending in the background at the client's own read timeout.
func (l *Limiter) withDeadline(ctx context.Context, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
	defer cancel()
	if l.direct {
		if err := fn(ctx); err != nil {
			if cerr := ctx.Err(); cerr != nil {
				return fmt.Errorf("%w (%w)", cerr, err)
			}
			return err
		}
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
