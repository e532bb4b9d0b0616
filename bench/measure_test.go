package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/posedge/posedge/internal/testenv/load"
)

// pollEvery is how often a drain or an ingest is looked at: each look
// costs the process watched (a /metrics scrape, a COUNT), so not too
// often on 2 CPUs; a drain of thousands of rows spans dozens of looks.
const pollEvery = 20 * time.Millisecond

// concurrency is the number of callers of both sides of every
// throughput comparison: a busy store's tills and back office at once.
const concurrency = 32

// runConcurrent runs n calls of op over concurrency goroutines
// (internal/testenv/load) and returns the elapsed time and every call's
// latency; the first error stops it.
func runConcurrent(n int, op func(i int) error) (time.Duration, []time.Duration, error) {
	return load.Run(n, concurrency, op)
}

// runPaced starts n calls of op at rate per second, each in its own
// goroutine (an open loop: a slow answer does not delay the next
// request), and returns every call's latency.
func runPaced(n int, rate float64, op func(i int) error) ([]time.Duration, error) {
	lat := make([]time.Duration, n)
	errs := make([]error, n)
	interval := time.Duration(float64(time.Second) / rate)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			t0 := time.Now()
			errs[i] = op(i)
			lat[i] = time.Since(t0)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return lat, nil
}

// pct is the p-quantile (0..1) of lat.
func pct(lat []time.Duration, p float64) time.Duration { return load.Percentile(lat, p) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// median of the repetitions of one figure.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread prints the repetitions of a figure, for the table.
func spread(v []float64, format string) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf(format, x)
	}
	return strings.Join(parts, " ")
}

// client is an HTTP client sized for concurrency callers: the default
// transport keeps 2 idle connections per host, and the other 30 callers
// would open a new TCP connection per request.
func newHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 4 * concurrency
	tr.MaxIdleConnsPerHost = 4 * concurrency
	return &http.Client{Timeout: 30 * time.Second, Transport: tr}
}

// call sends one request and returns the status and body.
func call(c *http.Client, method, url, auth string, body []byte, idemKey string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, rd)
	if err != nil {
		return 0, nil, err
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	res, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// scrapeMetrics reads the samples of a Prometheus text page: by name, a
// labelled one by its name with its labels as the page writes them.
func scrapeMetrics(c *http.Client, url string) (map[string]float64, error) {
	status, body, err := call(c, "GET", url, "", nil, "")
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	if status != 200 {
		return nil, fmt.Errorf("scrape %s: status %d", url, status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		// A labelled series is kept under its whole name, labels and all
		// (`posedge_sales_total{kind="sale",mode="degraded"}`).
		name, val, ok := strings.Cut(line, " ")
		if strings.ContainsRune(line, '{') {
			i := strings.LastIndexByte(line, ' ')
			name, val, ok = line[:i], line[i+1:], i > 0
		}
		if !ok {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}

// bucket is one cumulative bucket of a Prometheus histogram.
type bucket struct {
	le    float64 // upper bound, +Inf for the last
	count float64
}

// scrapeHistogram reads the buckets of an unlabelled histogram, in order.
func scrapeHistogram(c *http.Client, url, name string) ([]bucket, error) {
	status, body, err := call(c, "GET", url, "", nil, "")
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	if status != 200 {
		return nil, fmt.Errorf("scrape %s: status %d", url, status)
	}
	var out []bucket
	prefix := name + `_bucket{le="`
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		le, val, ok := strings.Cut(rest, `"} `)
		if !ok {
			continue
		}
		b := bucket{}
		if b.le, err = strconv.ParseFloat(le, 64); err != nil {
			return nil, fmt.Errorf("%s bucket %q: %w", name, le, err)
		}
		if b.count, err = strconv.ParseFloat(strings.TrimSpace(val), 64); err != nil {
			return nil, fmt.Errorf("%s bucket %q: %w", name, le, err)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no histogram %s in %s", name, url)
	}
	return out, sc.Err()
}

// histQuantile is the q-quantile of the observations made between two
// scrapes of one histogram, interpolated linearly inside its bucket as
// Prometheus's histogram_quantile does (so only as fine as the buckets).
func histQuantile(before, after []bucket, q float64) float64 {
	if len(before) != len(after) {
		return math.NaN()
	}
	total := after[len(after)-1].count - before[len(before)-1].count
	if total <= 0 {
		return math.NaN()
	}
	rank := q * total
	lower, cumLower := 0.0, 0.0
	for i := range after {
		cum := after[i].count - before[i].count
		if cum >= rank {
			if math.IsInf(after[i].le, 1) {
				return lower // beyond the last finite bound: that bound
			}
			if cum == cumLower {
				return after[i].le
			}
			return lower + (after[i].le-lower)*(rank-cumLower)/(cum-cumLower)
		}
		lower, cumLower = after[i].le, cum
	}
	return lower
}
