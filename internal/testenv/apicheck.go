package testenv

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/apispec"
)

// APICheck holds every HTTP exchange a test has with posedge to
// docs/openapi.yaml, and with posedge-hq to docs/openapi-hq.yaml: a request the description rejects fails the test
// unless the test marked it as meant to be invalid, and then the
// description must reject it and the server answer 4xx (so a mark cannot
// outlive the reason for it); every answer must be described (status,
// headers, body).
type APICheck struct {
	Spec   *apispec.Spec // posedge's terminal and admin listeners
	HQSpec *apispec.Spec // posedge-hq's admin listener
	// Counts is shared by every store of a test binary (TestMain logs it).
	Counts *APICounts
}

// APICounts are the exchanges an APICheck has seen.
type APICounts struct {
	Requests  atomic.Int64 // requests checked against the description
	Invalid   atomic.Int64 // of which marked invalid, and rejected by it
	Responses atomic.Int64 // answers checked
	HQ        atomic.Int64 // of the requests, those to posedge-hq
	Nanos     atomic.Int64 // time spent checking
}

func (c *APICounts) String() string {
	return fmt.Sprintf("%d requests (%d meant to be invalid, %d to posedge-hq) and %d answers checked against %s and %s in %v",
		c.Requests.Load(), c.Invalid.Load(), c.HQ.Load(), c.Responses.Load(), apispec.File, apispec.HQFile,
		time.Duration(c.Nanos.Load()).Round(time.Millisecond))
}

// NewAPICheck loads both descriptions from the module root.
func NewAPICheck() (*APICheck, error) {
	s, err := apispec.LoadFromModule(apispec.File)
	if err != nil {
		return nil, err
	}
	hq, err := apispec.LoadFromModule(apispec.HQFile)
	if err != nil {
		return nil, err
	}
	return &APICheck{Spec: s, HQSpec: hq, Counts: &APICounts{}}, nil
}

type invalidKey struct{}

// Invalid marks a request's context: the test means the request to break
// the description (a missing key, malformed JSON, a bad barcode...).
func Invalid(ctx context.Context) context.Context {
	return context.WithValue(ctx, invalidKey{}, true)
}

// IsInvalid reports whether ctx carries the Invalid mark.
func IsInvalid(ctx context.Context) bool {
	v, _ := ctx.Value(invalidKey{}).(bool)
	return v
}

// Exchange checks one exchange with listener (apispec.Terminal,
// apispec.Admin or apispec.HQ); res is nil when no answer came (a
// connection error), reqBody and resBody are the bodies already read.
// Failures are reported with t.Errorf, so it may be called from any
// goroutine of a running test.
func (c *APICheck) Exchange(t testing.TB, listener string, invalid bool, req *http.Request, reqBody []byte, res *http.Response, resBody []byte) {
	t.Helper()
	defer func(start time.Time) { c.Counts.Nanos.Add(int64(time.Since(start))) }(time.Now())
	name := req.Method + " " + req.URL.RequestURI()
	spec := c.Spec
	switch listener {
	case apispec.HQ:
		spec = c.HQSpec
		c.Counts.HQ.Add(1)
	case apispec.Terminal, apispec.Admin:
	default:
		t.Errorf("%s to %s: not a listener of the store, so not checked against %s", name, req.URL.Host, apispec.File)
		return
	}
	status := "no answer"
	if res != nil {
		status = fmt.Sprint(res.StatusCode)
	}
	problems := spec.CheckRequest(listener, req, reqBody)
	c.Counts.Requests.Add(1)
	switch {
	case invalid && len(problems) == 0:
		t.Errorf("%s (%s): marked invalid, but %s accepts the request: drop the mark or fix the description", name, status, spec.Name)
	case invalid && res != nil && (res.StatusCode < 400 || res.StatusCode > 499):
		t.Errorf("%s: a request %s rejects (%s) was answered %s, not 4xx: %s", name, spec.Name, problems[0], status, resBody)
	case invalid:
		c.Counts.Invalid.Add(1)
	case len(problems) > 0:
		t.Errorf("%s (%s): the request breaks %s (mark it testenv.Invalid if meant): %s", name, status, spec.Name, strings.Join(problems, "; "))
	}
	if res == nil {
		return
	}
	c.Counts.Responses.Add(1)
	if _, problems := spec.CheckResponse(listener, req, res, resBody); len(problems) > 0 {
		t.Errorf("%s: answer %d is not as %s describes it: %s (body %.500s)", name, res.StatusCode, spec.Name, strings.Join(problems, "; "), resBody)
	}
}

// CheckingProxy is a reverse proxy on loopback in front of one listener
// whose every exchange is checked like the Store's own (for clients the
// test does not hold, such as curl). A connection that fails upstream
// fails the same way to the client: its connection is closed, with no
// answer.
type CheckingProxy struct {
	URL string // http://host:port of the proxy
	srv *httptest.Server
}

// StartCheckingProxy proxies to target (http://host:port) and checks as
// listener; it stops with the test.
func (c *APICheck) StartCheckingProxy(t testing.TB, listener, target string) *CheckingProxy {
	t.Helper()
	upstream := &http.Transport{DisableCompression: true}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			hangUp(w)
			return
		}
		out, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			t.Errorf("checking proxy: %v", err)
			hangUp(w)
			return
		}
		out.Header = r.Header.Clone()
		out.Host = r.Host
		res, err := upstream.RoundTrip(out)
		var resBody []byte
		if err == nil {
			resBody, err = io.ReadAll(res.Body)
			res.Body.Close()
		}
		if err != nil {
			c.Exchange(t, listener, false, out, body, nil, nil)
			hangUp(w)
			return
		}
		c.Exchange(t, listener, false, out, body, res, resBody)
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		_, _ = w.Write(resBody)
	})
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); upstream.CloseIdleConnections() })
	return &CheckingProxy{URL: srv.URL, srv: srv}
}

// hangUp closes the client's connection without an answer.
func hangUp(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

// Client is an HTTP client whose every exchange with listener is checked
// like the Store's (a request meant to be invalid carries Invalid in its
// context), for tests that serve a handler themselves.
func (c *APICheck) Client(t testing.TB, listener string) *http.Client {
	return &http.Client{Timeout: 15 * time.Second,
		Transport: &checkingTransport{check: c, t: t, listener: listener, base: http.DefaultTransport}}
}

type checkingTransport struct {
	check    *APICheck
	t        testing.TB
	listener string
	base     http.RoundTripper
}

func (ct *checkingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read the request body: %w", err)
		}
		body = b
	}
	out := req.Clone(req.Context())
	if req.Body != nil {
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
	}
	invalid := IsInvalid(req.Context())
	res, err := ct.base.RoundTrip(out)
	if err != nil {
		ct.check.Exchange(ct.t, ct.listener, invalid, out, body, nil, nil)
		return nil, err
	}
	rb, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the answer: %w", err)
	}
	ct.check.Exchange(ct.t, ct.listener, invalid, out, body, res, rb)
	res.Body = io.NopCloser(bytes.NewReader(rb))
	return res, nil
}
