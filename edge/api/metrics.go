package api

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// HTTPMetrics count requests and their latency per listener and route.
type HTTPMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	// The children already looked up, by listener and route (and code):
	// a request then hashes no label values and formats no status code
	// (issue 26). Routes are the muxes' patterns and codes a handful, so
	// these stay small.
	mu     sync.RWMutex
	counts map[countKey]prometheus.Counter
	lats   map[routeKey]prometheus.Observer
}

type routeKey struct{ listener, route string }

type countKey struct {
	routeKey
	code int
}

// observe counts one answer of route with code and its latency.
func (m *HTTPMetrics) observe(k routeKey, code int, took time.Duration) {
	ck := countKey{k, code}
	m.mu.RLock()
	c, lat := m.counts[ck], m.lats[k]
	m.mu.RUnlock()
	if c == nil || lat == nil {
		c = m.requests.WithLabelValues(k.listener, k.route, strconv.Itoa(code))
		lat = m.latency.WithLabelValues(k.listener, k.route)
		m.mu.Lock()
		m.counts[ck], m.lats[k] = c, lat
		m.mu.Unlock()
	}
	c.Inc()
	lat.Observe(took.Seconds())
}

// NewHTTPMetrics registers the HTTP metrics on reg.
func NewHTTPMetrics(reg prometheus.Registerer) *HTTPMetrics {
	m := &HTTPMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "posedge_http_requests_total",
			Help: "HTTP requests answered, by listener (terminal|admin), route pattern and status code."},
			[]string{"listener", "route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "posedge_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by listener and route pattern.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}, []string{"listener", "route"}),
		counts: map[countKey]prometheus.Counter{},
		lats:   map[routeKey]prometheus.Observer{},
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.latency)
	}
	return m
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// wrap measures next; the route is the mux pattern that matched (the
// mux records it on the request), so paths with ids do not explode the
// label set.
func (m *HTTPMetrics) wrap(listener string, next http.Handler) http.Handler {
	if m == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		route := r.Pattern
		if route == "" || route == "/" {
			route = "other"
		}
		m.observe(routeKey{listener, route}, rec.code, time.Since(start))
	})
}
