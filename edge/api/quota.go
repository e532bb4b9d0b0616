package api

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/posedge/posedge/edge/ratelimit"
)

// ByteQuota bounds the bytes of money bodies (sales, refunds, batches)
// each terminal may send per fixed window (limits.terminal_bytes, issue
// 22 finding 6: one till's batches filled Redis, which keeps each
// result 48 h, and the journal). It is per daemon: two daemons sharing a
// Redis each allow the quota.
type ByteQuota struct {
	limit  int64
	window time.Duration
	now    func() time.Time
	denied *prometheus.CounterVec

	mu   sync.Mutex
	used map[string]*quotaWindow
}

type quotaWindow struct {
	start time.Time
	bytes int64
}

// NewByteQuota allows limit bytes per terminal per window; reg may be nil.
func NewByteQuota(limit int64, window time.Duration, now func() time.Time, reg prometheus.Registerer) *ByteQuota {
	q := &ByteQuota{limit: limit, window: window, now: now, used: map[string]*quotaWindow{},
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "posedge_terminal_bytes_denied_total",
			Help: "Money requests refused because the terminal sent more than limits.terminal_bytes in the window, by terminal."}, []string{"terminal"})}
	if reg != nil {
		reg.MustRegister(q.denied)
	}
	return q
}

// allow counts n bytes for term and says true, or refuses them (nothing
// counted): then false, the bytes already counted and the time until the
// window ends.
func (q *ByteQuota) allow(term string, n int) (bool, int64, time.Duration) {
	if q == nil {
		return true, 0, 0
	}
	now := q.now()
	q.mu.Lock()
	defer q.mu.Unlock()
	w := q.used[term]
	if w == nil || now.Sub(w.start) >= q.window {
		w = &quotaWindow{start: now}
		q.used[term] = w
	}
	if w.bytes+int64(n) > q.limit {
		q.denied.WithLabelValues(term).Inc()
		return false, w.bytes, w.start.Add(q.window).Sub(now)
	}
	w.bytes += int64(n)
	return true, w.bytes, 0
}

// charge answers 429 terminal_bytes_exceeded, with Retry-After, when the
// body of b's size is over term's quota; it says whether to go on.
func (q *ByteQuota) charge(w http.ResponseWriter, term string, b []byte) bool {
	ok, used, wait := q.allow(term, len(b))
	if ok {
		return true
	}
	w.Header().Set("Retry-After", strconv.Itoa(ratelimit.RetryAfterSeconds(wait)))
	writeError(w, http.StatusTooManyRequests, "terminal_bytes_exceeded",
		fmt.Sprintf("this terminal already sent %d of its %d bytes of sales, refunds and batches in the window (limits.terminal_bytes); retry after the Retry-After seconds", used, q.limit))
	return false
}
