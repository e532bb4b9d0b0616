package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

const waitLong = 90 * time.Second // a 2-core machine shared with other test runs

// hqBin is the posedge-hq binary the process tests run, built once.
var hqBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "posedge-hq-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hqBin = filepath.Join(dir, "posedge-hq")
	build := exec.Command("go", "build", "-o", hqBin, "-ldflags", "-X main.version=9.9.9-test", ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build posedge-hq: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("nats_url: \"nats://127.0.0.1:1\"\nduplicate_window: soon\nfoo: 1\n"), 0o644)
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("nats_url: \"nats://127.0.0.1:1\"\ndatabase: \"sqlite://"+filepath.Join(dir, "hq.db")+"\"\n"), 0o644)
	invalid := filepath.Join(dir, "invalid.yaml")
	os.WriteFile(invalid, []byte("nats_url: \"nats://127.0.0.1:1\"\nduplicate_window: soon\nbatch_size: 0\n"), 0o644)
	tests := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"version"}, 0, "posedge-hq 9.9.9-test", ""},
		{nil, 2, "", "usage:"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"run", "--nope"}, 2, "", "flag provided but not defined"},
		{[]string{"run", "--config", bad}, 1, "", `unknown field "foo"`},
		{[]string{"run", "--config", invalid}, 1, "", "duplicate_window"},
		{[]string{"run", "--config", invalid}, 1, "", "batch_size"},
		{[]string{"run", "--config", filepath.Join(dir, "missing.yaml")}, 1, "", "config file not found"},
		{[]string{"run", "--config", invalid, "--log-format", "xml"}, 2, "", "--log-format"},
		{[]string{"check-config", "--config", invalid}, 1, "", "batch_size"},
		{[]string{"check-config", "--config", filepath.Join(dir, "missing.yaml")}, 1, "", "config file not found"},
		{[]string{"check-config", "--config", good}, 0, "OK (stream POS_TXN, sqlite database, admin 127.0.0.1:8090, silent after 5m0s)", ""},
		{[]string{"check-config", "extra"}, 2, "", "unexpected argument"},
		{[]string{"stores", "--config", invalid}, 3, "", "UNKNOWN: cannot read the config"},
		{[]string{"stores", "--nope"}, 3, "", "flag provided but not defined"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runHQ(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.out) || !strings.Contains(stderr, tc.err) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit %d, %q, %q", code, stdout, stderr, tc.code, tc.out, tc.err)
			}
		})
	}
}

// runHQ runs the posedge-hq binary to its end: exit code and output.
func runHQ(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(hqBin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errOut.String()
}

// backends: a fresh database URL per call, SQLite and PostgreSQL.
func backends(t *testing.T) []struct {
	name string
	dsn  func(t *testing.T) string
} {
	var pg *testenv.Postgres
	return []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "hq.db") }},
		{"postgres", func(t *testing.T) string {
			if pg == nil {
				pg = testenv.StartPostgres(t)
			}
			return pg.NewDatabase(t)
		}},
	}
}

// hqProc is one posedge-hq process.
type hqProc struct {
	*testenv.Proc
	admin string
}

func startHQ(t *testing.T, natsURL, dsn, name string) *hqProc {
	t.Helper()
	return startHQWith(t, natsURL, dsn, name, "", nil)
}

// startHQWith is startHQ with more config lines and environment.
func startHQWith(t *testing.T, natsURL, dsn, name, moreConfig string, env []string) *hqProc {
	t.Helper()
	dir := t.TempDir()
	admin := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	conf := filepath.Join(dir, "hq.yaml")
	os.WriteFile(conf, []byte(fmt.Sprintf("nats_url: %q\ndatabase: %q\nadmin:\n  listen: %q\nbatch_size: 100\nack_wait: \"3s\"\n%s",
		natsURL, dsn, admin, moreConfig)), 0o644)
	p := &hqProc{Proc: &testenv.Proc{Name: name, Args: []string{hqBin, "run", "--config", conf, "--log-format", "json"},
		Log: filepath.Join(dir, name+".log"), Env: env}, admin: "http://" + admin}
	p.Start(t)
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("%s log:\n%s", name, p.Tail(4000))
		}
	})
	p.waitHealthy(t)
	return p
}

func (p *hqProc) waitHealthy(t *testing.T) {
	t.Helper()
	testenv.WaitFor(t, waitLong, p.Name+" /healthz", func() bool {
		r, err := http.Get(p.admin + "/healthz")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	})
}

// stored is the number of transactions stored for store, asked over the
// admin API; -1 when the process does not answer.
func (p *hqProc) stored(store string) int64 {
	r, err := http.Get(p.admin + "/v1/stores/" + store + "/watermark")
	if err != nil {
		return -1
	}
	defer r.Body.Close()
	var w struct{ Count int64 }
	if json.NewDecoder(r.Body).Decode(&w) != nil {
		return -1
	}
	return w.Count
}

var ingestedRe = regexp.MustCompile(`(?m)^posedge_hq_ingested_total\{type="txn"\} (\S+)$`)

func (p *hqProc) ingested(t *testing.T) float64 {
	r, err := http.Get(p.admin + "/metrics")
	if err != nil {
		t.Fatalf("%s /metrics: %v", p.Name, err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	m := ingestedRe.FindSubmatch(body)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// metric is the value of a metric of the process's /metrics (its series
// summed; 0 when missing).
func (p *hqProc) metric(t *testing.T, name string) float64 {
	t.Helper()
	r, err := http.Get(p.admin + "/metrics")
	if err != nil {
		t.Fatalf("%s /metrics: %v", p.Name, err)
	}
	defer r.Body.Close()
	body, _ := io.ReadAll(r.Body)
	return testenv.SumMetric(string(body), name)
}

var stores = []string{"S001", "S002", "S003"}

// flood publishes perStore sales for each store, each with its
// Nats-Msg-Id, as fast as JetStream acks them; published counts them.
func flood(t *testing.T, natsURL string, perStore int, published *atomic.Int64) <-chan error {
	done := make(chan error, 1)
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(512))
	go func() {
		defer nc.Close()
		for i := 1; i <= perStore; i++ {
			for _, s := range stores {
				body, _ := json.Marshal(map[string]any{
					"flow_no": strconv.Itoa(i), "store_id": s, "terminal_id": fmt.Sprintf("T%02d", i%5+1), "kind": "sale",
					"total_cents": i, "tender": "cash", "created_at": time.Now().UTC().Format(time.RFC3339Nano),
					"lines": []map[string]any{{"barcode": "A1", "qty": 1, "price_cents": i}},
				})
				m := nats.NewMsg(wire.TxnSubject(wire.DefaultSubjectPrefix, s))
				m.Header.Set(wire.HeaderMsgID, wire.MsgID(s, strconv.Itoa(i)))
				m.Header.Set(wire.HeaderSchema, wire.SchemaV1)
				m.Data = body
				if _, err := js.PublishMsgAsync(m); err != nil {
					done <- err
					return
				}
				published.Add(1)
			}
		}
		select {
		case <-js.PublishAsyncComplete():
			done <- nil
		case <-time.After(waitLong):
			done <- fmt.Errorf("publish acks missing")
		}
	}()
	return done
}

func total(ps ...*hqProc) int64 {
	var n int64
	for _, s := range stores {
		best := int64(-1)
		for _, p := range ps {
			best = max(best, p.stored(s))
		}
		if best < 0 {
			return -1
		}
		n += best
	}
	return n
}

// verify checks, in the database itself, that every published sale is
// stored exactly once.
func verify(t *testing.T, dsn string, perStore int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := hq.OpenStore(ctx, dsn, hqdb.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	flows := make([]string, perStore)
	for i := range flows {
		flows[i] = strconv.Itoa(i + 1)
	}
	for _, st := range stores {
		have, err := s.Have(ctx, st, flows)
		if err != nil || len(have) != perStore {
			t.Errorf("%s: %d of %d sales stored (%v)", st, len(have), perStore, err)
		}
		w, _ := s.Watermark(ctx, st)
		if w.Count != int64(perStore) || w.MaxFlowNo != strconv.Itoa(perStore) {
			t.Errorf("%s: watermark %+v, want %d rows up to flow %d", st, w, perStore, perStore)
		}
		if cs, _ := s.Conflicts(ctx, st); len(cs) != 0 {
			t.Errorf("%s: %d conflicts", st, len(cs))
		}
	}
}

// TestKillMidBatch: posedge-hq is SIGKILLed twice while a publisher
// floods the stream; after restarts every sale is stored exactly once.
func TestKillMidBatch(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			n := testenv.StartNATS(t)
			dsn := be.dsn(t)
			p := startHQ(t, n.URL(), dsn, "posedge-hq")
			const perStore = 2000
			var published atomic.Int64
			done := flood(t, n.URL(), perStore, &published)
			for kill := 1; kill <= 2; kill++ {
				before := max(total(p), 0)
				testenv.WaitFor(t, waitLong, "ingest under way", func() bool { return total(p) >= before+300 })
				t.Logf("kill %d after about %d stored, %d published", kill, total(p), published.Load())
				p.Kill()
				p.Start(t)
				p.waitHealthy(t)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(waitLong):
				t.Fatal("publisher did not finish")
			}
			testenv.WaitFor(t, waitLong, "every sale stored", func() bool { return total(p) == int64(len(stores)*perStore) })
			if err := p.Terminate(30 * time.Second); err != nil {
				t.Errorf("SIGTERM: %v", err)
			}
			verify(t, dsn, perStore)
		})
	}
}

// TestGCPercent: posedge-hq runs with gc_percent as Go's GOGC (400 when
// the key is absent), and an operator's GOGC in the environment wins; seen
// from outside, in the Go collector's go_gc_gogc_percent of its /metrics.
func TestGCPercent(t *testing.T) {
	n := testenv.StartNATS(t)
	tests := []struct {
		name, config string
		env          []string
		want         float64
	}{
		{"default", "", []string{"GOGC="}, 400},
		{"from the config", "gc_percent: 250\n", []string{"GOGC="}, 250},
		{"the environment wins", "gc_percent: 250\n", []string{"GOGC=150"}, 150},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dsn := "sqlite://" + filepath.Join(t.TempDir(), "hq.db")
			p := startHQWith(t, n.URL(), dsn, fmt.Sprintf("hq-gc%d", i), tc.config, tc.env)
			if got := p.metric(t, "go_gc_gogc_percent"); got != tc.want {
				t.Fatalf("go_gc_gogc_percent = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTwoProcesses: two posedge-hq processes on one stream and database
// share the load; nothing is lost or stored twice.
func TestTwoProcesses(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be.name, func(t *testing.T) {
			n := testenv.StartNATS(t)
			dsn := be.dsn(t)
			a := startHQ(t, n.URL(), dsn, "hq-a")
			b := startHQ(t, n.URL(), dsn, "hq-b")
			const perStore = 2000
			var published atomic.Int64
			if err := <-flood(t, n.URL(), perStore, &published); err != nil {
				t.Fatal(err)
			}
			testenv.WaitFor(t, waitLong, "every sale stored", func() bool { return total(a, b) == int64(len(stores)*perStore) })
			ia, ib := a.ingested(t), b.ingested(t)
			t.Logf("hq-a stored %v, hq-b stored %v", ia, ib)
			if ia+ib != float64(len(stores)*perStore) || ia == 0 || ib == 0 {
				t.Errorf("ingested: hq-a %v + hq-b %v, want both > 0 and %d in all", ia, ib, len(stores)*perStore)
			}
			verify(t, dsn, perStore)
		})
	}
}
