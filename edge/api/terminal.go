package api

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/edge/ratelimit"
	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/internal/httpguard"
)

// TerminalDeps are what the terminal API needs.
type TerminalDeps struct {
	Keys    map[string]string // hex sha256 of a key → terminal id
	Ledger  *ledger.Ledger
	Limiter *ratelimit.Limiter
	Guard   *ratelimit.AuthGuard
	Log     *slog.Logger
	Seen    *LastSeen    // may be nil
	HTTP    *HTTPMetrics // may be nil
	Quota   *ByteQuota   // limits.terminal_bytes; nil: none
}

// LastSeen records when each terminal last called.
type LastSeen struct {
	mu sync.Mutex
	m  map[string]time.Time
}

// NewLastSeen makes an empty record.
func NewLastSeen() *LastSeen { return &LastSeen{m: map[string]time.Time{}} }

func (s *LastSeen) mark(term string) {
	s.mu.Lock()
	s.m[term] = time.Now()
	s.mu.Unlock()
}

// Snapshot copies the record.
func (s *LastSeen) Snapshot() map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]time.Time, len(s.m))
	for k, v := range s.m {
		out[k] = v
	}
	return out
}

type terminalAPI struct {
	TerminalDeps
	// byHash is Keys by the raw sha256 instead of its hex: a request's key
	// is looked up without encoding its hash (issue 26).
	byHash map[[sha256.Size]byte]string
}

// keysByHash is keys (lowercase hex sha256 → terminal id) by the hash
// itself. An entry that is not 64 lowercase hex digits could never match
// a hex-encoded hash, so it is left out here too.
func keysByHash(keys map[string]string) map[[sha256.Size]byte]string {
	out := make(map[[sha256.Size]byte]string, len(keys))
	for k, id := range keys {
		var h [sha256.Size]byte
		if n, err := hex.Decode(h[:], []byte(k)); err != nil || n != len(h) || hex.EncodeToString(h[:]) != k {
			continue
		}
		out[h] = id
	}
	return out
}

type termHandler func(w http.ResponseWriter, r *http.Request, term string)

// readHandler is a termHandler that also gets the reply of a read made in
// the limiter's round trip (the zero Reply when it did not run there),
// opaque here: only the ledger reads it.
type readHandler func(w http.ResponseWriter, r *http.Request, term string, reply redisdb.Reply)

// readQueuer queues, for r, a read-only command into the limiter's round
// trip, or nothing (nil).
type readQueuer func(r *http.Request) redisdb.Read

// NewTerminal returns the terminal API handler.
func NewTerminal(d TerminalDeps) http.Handler {
	t := &terminalAPI{TerminalDeps: d, byHash: keysByHash(d.Keys)}
	mux := http.NewServeMux()
	mux.Handle("GET /v1/items/{barcode}", t.guardRead(ratelimit.ActionScan, t.itemRead, t.item))
	mux.Handle("POST /v1/payment-tokens", t.guard("", t.token))
	mux.Handle("POST /v1/sales", t.guard(ratelimit.ActionPay, t.sale))
	mux.Handle("POST /v1/sales/batch", t.guard(ratelimit.ActionSync, t.batch))
	mux.Handle("GET /v1/sales/{flow_no}", t.guard("", t.get))
	mux.Handle("POST /v1/refunds", t.guard(ratelimit.ActionRefund, t.refund))
	mux.Handle("/", t.guard("", func(w http.ResponseWriter, r *http.Request, _ string) {
		writeError(w, http.StatusNotFound, "not_found", "no such endpoint: "+r.Method+" "+r.URL.Path)
	}))
	return d.HTTP.wrap("terminal", httpguard.CleanPaths(mux))
}

func sourceAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// guard authenticates, then charges the limiter (every level at once)
// before anything else: an allowed request is charged whatever follows.
func (t *terminalAPI) guard(action string, h termHandler) http.Handler {
	return t.guardRead(action, nil, func(w http.ResponseWriter, r *http.Request, term string, _ redisdb.Reply) {
		h(w, r, term)
	})
}

// guardRead is guard with the read queue makes (when queue is not nil)
// pipelined after the limiter's decision, in the same Redis round trip;
// h gets its reply. The read runs even for a denied request, so it must
// be read-only.
func (t *terminalAPI) guardRead(action string, queue readQueuer, h readHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src := sourceAddr(r)
		if blocked, retry := t.Guard.Blocked(src); blocked {
			w.Header().Set("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(retry)))
			writeError(w, http.StatusTooManyRequests, "rate_limited", "too many failed authentications from this address; wait before retrying")
			return
		}
		term, ok := t.auth(r)
		if !ok {
			t.Guard.Fail(src)
			w.Header().Set("WWW-Authenticate", `Bearer realm="posedge"`)
			writeError(w, http.StatusUnauthorized, "unauthorized", "missing or unknown terminal key (Authorization: Bearer <key>)")
			return
		}
		if t.Seen != nil {
			t.Seen.mark(term)
		}
		var read redisdb.Read
		if queue != nil {
			read = queue(r)
		}
		dec, reply, err := t.Limiter.AllowRead(r.Context(), term, action, read)
		if err != nil {
			t.Log.Error("rate limiter", "terminal", term, "err", err)
			writeError(w, http.StatusInternalServerError, "internal", "rate limiter failed")
			return
		}
		writeRateLimitHeaders(w.Header(), dec)
		if !dec.Allowed {
			writeError(w, http.StatusTooManyRequests, "rate_limited", "rate limit of "+dec.Policy+" reached; retry after the Retry-After seconds")
			return
		}
		h(w, r, term, reply)
	})
}

func (t *terminalAPI) auth(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, key, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || key == "" {
		return "", false
	}
	term, ok := t.byHash[sha256.Sum256([]byte(strings.TrimSpace(key)))]
	return term, ok
}

// itemRead reads the item in the limiter's round trip: one Redis round
// trip per lookup. The ledger queues the read (it owns the item's key) or
// nothing, for an invalid barcode or while degraded.
func (t *terminalAPI) itemRead(r *http.Request) redisdb.Read {
	return t.Ledger.ItemRead(r.PathValue("barcode"))
}

func (t *terminalAPI) item(w http.ResponseWriter, r *http.Request, _ string, reply redisdb.Reply) {
	bc := r.PathValue("barcode")
	if !ledger.ValidBarcode(bc) {
		writeError(w, http.StatusBadRequest, "invalid_barcode", "barcode must be 1-64 of [A-Za-z0-9._-]")
		return
	}
	it, err := t.Ledger.ItemFrom(r.Context(), bc, reply)
	if err != nil {
		fail(w, t.Log, err)
		return
	}
	if it == nil {
		writeJSON(w, http.StatusOK, it)
		return
	}
	writeRaw(w, http.StatusOK, appendItemJSON(make([]byte, 0, 128), it))
}

func (t *terminalAPI) token(w http.ResponseWriter, r *http.Request, term string) {
	if b, e := readBody(r, maxBodyBytes); e != nil {
		fail(w, t.Log, e)
		return
	} else if len(strings.TrimSpace(string(b))) > 0 && strings.TrimSpace(string(b)) != "{}" {
		writeError(w, http.StatusBadRequest, "unknown_field", "payment-tokens takes no body")
		return
	}
	tok, err := t.Ledger.NewToken(r.Context(), term)
	if err != nil {
		fail(w, t.Log, err)
		return
	}
	writeJSON(w, http.StatusCreated, tok)
}

func (t *terminalAPI) answer(w http.ResponseWriter, res *ledger.Result, err error) {
	if err != nil {
		fail(w, t.Log, err)
		return
	}
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	writeRaw(w, http.StatusCreated, res.Body)
}

func (t *terminalAPI) sale(w http.ResponseWriter, r *http.Request, term string) {
	money(t, w, r, term, parseSale, t.Ledger.Sale)
}

func (t *terminalAPI) refund(w http.ResponseWriter, r *http.Request, term string) {
	money(t, w, r, term, parseRefund, t.Ledger.Refund)
}

// money answers a sale or a refund: the required Idempotency-Key, a
// bounded body, its decoding, then the ledger (which validates it).
func money[R any](t *terminalAPI, w http.ResponseWriter, r *http.Request, term string,
	parse func([]byte) (R, *ledger.Error),
	record func(ctx context.Context, term, key string, req R) (*ledger.Result, error)) {
	key, e := idemKey(r)
	if e != nil {
		fail(w, t.Log, e)
		return
	}
	b, e := readBody(r, maxBodyBytes)
	if e != nil {
		fail(w, t.Log, e)
		return
	}
	if !t.Quota.charge(w, term, b) {
		return
	}
	req, e := parse(b)
	if e != nil {
		fail(w, t.Log, e)
		return
	}
	res, err := record(r.Context(), term, key, req)
	t.answer(w, res, err)
}

type batchItem struct {
	Status int             `json:"status"`
	Sale   json.RawMessage `json:"sale,omitempty"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func (t *terminalAPI) batch(w http.ResponseWriter, r *http.Request, term string) {
	b, e := readBody(r, maxBatchBodyBytes)
	if e != nil {
		fail(w, t.Log, e)
		return
	}
	if !t.Quota.charge(w, term, b) {
		return
	}
	sales, e := parseBatch(b)
	if e != nil {
		fail(w, t.Log, e)
		return
	}
	results := t.Ledger.Batch(r.Context(), term, sales)
	out := make([]batchItem, len(results))
	for i, res := range results {
		if res.Err != nil {
			out[i].Status = statusOf(res.Err.Kind)
			out[i].Error = &struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			}{res.Err.Code, res.Err.Message}
			continue
		}
		out[i] = batchItem{Status: http.StatusCreated, Sale: res.Result.Body}
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": out})
}

func (t *terminalAPI) get(w http.ResponseWriter, r *http.Request, _ string) {
	flow := r.PathValue("flow_no")
	if !ledger.ValidFlowNo(flow) {
		writeError(w, http.StatusNotFound, "sale_not_found", "no such flow number")
		return
	}
	b, err := t.Ledger.Get(r.Context(), flow)
	if err != nil {
		fail(w, t.Log, err)
		return
	}
	writeRaw(w, http.StatusOK, b)
}
