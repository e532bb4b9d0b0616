package testenv

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/posedge/posedge/internal/apispec"
)

// failures records what a check reports instead of failing the test.
type failures struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (f *failures) Helper() {}

func (f *failures) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, strings.TrimSpace(strings.ReplaceAll(fmt.Sprintf(format, args...), "\n", " ")))
}

func (f *failures) all() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return strings.Join(f.errs, " | ")
}

// answer is a stub admin listener answering status, header and body: the
// checker is held to answers a real daemon never gives on demand.
func answer(t *testing.T, status int, hdr map[string]string, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for k, v := range hdr {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestAPICheckFailsWhatTheDescriptionDoesNotSay(t *testing.T) {
	api, err := NewAPICheck()
	if err != nil {
		t.Fatal(err)
	}
	notFound := `{"error":{"code":"not_found","message":"no such path"}}`
	for _, c := range []struct {
		name    string
		path    string
		invalid bool // sent marked as meant to be invalid
		status  int
		hdr     map[string]string
		body    string
		want    string // in the failure; "" for none
	}{
		{"described answer", "/healthz", false, 200, nil, `{"status":"ok"}`, ""},
		{"undescribed field", "/healthz", false, 200, nil, `{"status":"ok","uptime":3}`, "answer 200 is not as docs/openapi.yaml describes it"},
		{"undescribed status", "/healthz", false, 418, nil, `{"status":"ok"}`, "answer 418 is not as"},
		{"undescribed header", "/healthz", false, 200, map[string]string{"X-Debug": "1"}, `{"status":"ok"}`, "header X-Debug is not named"},
		{"unknown path answered 404", "/nothing", true, 404, nil, notFound, ""},
		{"invalid request not marked", "/nothing", false, 404, nil, notFound, "the request breaks docs/openapi.yaml"},
		{"invalid request answered 2xx", "/nothing", true, 200, nil, notFound, "was answered 200, not 4xx"},
		{"a mark the description does not bear out", "/healthz", true, 200, nil, `{"status":"ok"}`, "marked invalid, but docs/openapi.yaml accepts"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := answer(t, c.status, c.hdr, c.body)
			req, err := http.NewRequest("GET", base+c.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			f := &failures{TB: t}
			api.Exchange(f, apispec.Admin, c.invalid, req, nil, res, body)
			got := f.all()
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("failures %q, want %q", got, c.want)
			}
		})
	}
}

// The checking proxy checks what goes through it, and an upstream that
// does not answer looks to the client like a connection error, not 502.
func TestCheckingProxy(t *testing.T) {
	api, err := NewAPICheck()
	if err != nil {
		t.Fatal(err)
	}
	f := &failures{TB: t}
	p := api.StartCheckingProxy(f, apispec.Admin, answer(t, 200, nil, `{"status":"ok","extra":1}`))
	r, err := http.Get(p.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || string(b) != `{"status":"ok","extra":1}` {
		t.Errorf("through the proxy: %d %s", r.StatusCode, b)
	}
	if !strings.Contains(f.all(), "answer 200 is not as") {
		t.Errorf("an undescribed field went through unreported: %q", f.all())
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	p = api.StartCheckingProxy(&failures{TB: t}, apispec.Admin, closed)
	if r, err := http.Get(p.URL + "/healthz"); err == nil {
		r.Body.Close()
		t.Fatalf("an upstream refusing connections answered %d through the proxy, want a connection error", r.StatusCode)
	}
}

// A Client checks what it sends and receives, and passes the answer on.
func TestAPICheckClient(t *testing.T) {
	api, err := NewAPICheck()
	if err != nil {
		t.Fatal(err)
	}
	f := &failures{TB: t}
	base := answer(t, 200, nil, `{"status":"ok","extra":1}`)
	r, err := api.Client(f, apispec.Admin).Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if string(b) != `{"status":"ok","extra":1}` {
		t.Errorf("the client's answer: %s", b)
	}
	if !strings.Contains(f.all(), "answer 200 is not as") {
		t.Errorf("an undescribed field went through unreported: %q", f.all())
	}
}
