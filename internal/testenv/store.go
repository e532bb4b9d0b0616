package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/apispec"
	_ "modernc.org/sqlite" // the HQ database is read as SQLite
)

// BuildBinaries builds posedge and posedge-hq into dir (once per test
// binary: call it from TestMain) and returns dir.
func BuildBinaries(dir string) error {
	root, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("find module root: %w", err)
	}
	for _, pkg := range []string{"posedge", "posedge-hq"} {
		args := []string{"build", "-o", filepath.Join(dir, pkg)}
		// make test-race sets POSEDGE_RACE=1: the daemons the e2e tests drive
		// are race builds, so a race in them fails the test that hit it.
		if os.Getenv("POSEDGE_RACE") == "1" {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/"+pkg)...)
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(root)))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	return nil
}

// StoreOptions tune a whole store.
type StoreOptions struct {
	Bin       string // dir holding posedge and posedge-hq (BuildBinaries)
	Terminals int    // default 4
	Limits    string // YAML lines under "limits:", indented two spaces; empty = contract defaults
	BatchSize int    // hq.batch_size, default 500
	Extra     string // more top-level YAML for posedge.yaml
	NoHQ      bool   // no posedge-hq process
	// NATSProxy puts a FaultProxy between posedge and NATS (posedge-hq
	// connects directly): Store.NATSProxy makes the WAN misbehave.
	NATSProxy bool
	// RedisProxy puts a FaultProxy between posedge and the Redis master:
	// Store.RedisProxy makes that one link misbehave while Redis and
	// Sentinel stay healthy. posedge then connects to redis.addr (the
	// proxy), not through Sentinel, which would hand it the master's own
	// address; so it follows no failover.
	RedisProxy bool
	// RedisPartitionable starts Redis with RedisOptions.Partitionable
	// (posedge gets redis.password), for Redis.SplitBrain and Redis.Cut.
	RedisPartitionable bool
	// JournalDir holds journal.db instead of the store's directory (a
	// filesystem a test can take away).
	JournalDir string
	// Timezone is the store's IANA zone (default UTC).
	Timezone string
	// SubjectPrefix is hq.subject_prefix of both posedge and posedge-hq
	// (default pos.txn).
	SubjectPrefix string
	// HQDatabase is posedge-hq's database URL (default SQLite in the
	// store's directory, which HQRows reads).
	HQDatabase string
	// StoreID is the store's id (default a random S…).
	StoreID string
	// Env is added to the posedge process's environment (test-only
	// knobs such as POSEDGE_TEST_CLOCK_SKEW).
	Env []string
	// EdgeArgs are appended to `posedge run --config FILE` (such as
	// --cpuprofile for the bench).
	EdgeArgs []string
	// chain, set by Chain.AddStore: the store uses the chain's NATS (as
	// its own NATS user) and posedge-hq, and a single Redis node.
	chain *Chain
	// API checks every exchange of the Store's HTTP helpers against
	// docs/openapi.yaml (default: loaded for this store; a test binary
	// shares one from TestMain so its counts cover the run).
	API *APICheck
}

// Store is a whole store on loopback: a Redis Sentinel topology, NATS with
// JetStream, posedge-hq and posedge as real processes.
type Store struct {
	t         testing.TB
	Dir       string
	StoreID   string
	Redis     *Redis
	NATS      *NATS
	NATSProxy *FaultProxy // with StoreOptions.NATSProxy
	HQ        *Proc
	HQDB      string
	HQAdmin   string
	Edge      *Proc
	EdgeURL   string
	AdminURL  string
	Config    string
	Journal   string // the journal file
	Terminals []string
	Keys      map[string]string
	Bin       string
	client    *http.Client
	opts      StoreOptions

	RedisProxy *FaultProxy // with StoreOptions.RedisProxy
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// StartStore starts the store and waits until posedge is ready.
func StartStore(t testing.TB, o StoreOptions) *Store {
	t.Helper()
	if o.Terminals == 0 {
		o.Terminals = 4
	}
	if o.BatchSize == 0 {
		o.BatchSize = 500
	}
	if o.Timezone == "" {
		o.Timezone = "UTC"
	}
	if o.SubjectPrefix == "" {
		o.SubjectPrefix = "pos.txn"
	}
	if o.API == nil {
		api, err := NewAPICheck()
		if err != nil {
			t.Fatal(err)
		}
		o.API = api
	}
	s := &Store{t: t, Dir: t.TempDir(), StoreID: "S" + randHex(3), Keys: map[string]string{}, Bin: o.Bin,
		client: &http.Client{Timeout: 15 * time.Second}, opts: o}
	if o.StoreID != "" {
		s.StoreID = o.StoreID
	}
	if c := o.chain; c != nil {
		s.Redis = StartRedisSingle(t)
		s.NATS, s.HQAdmin, s.HQDB, o.NoHQ = c.NATS, c.HQAdmin, c.HQDB, true
	} else {
		s.Redis = StartRedis(t, RedisOptions{Partitionable: o.RedisPartitionable})
		s.NATS = StartNATS(t)
	}
	if o.NATSProxy {
		s.NATSProxy = StartFaultProxy(t, fmt.Sprintf("127.0.0.1:%d", s.NATS.Port))
	}
	if o.RedisProxy {
		s.RedisProxy = StartFaultProxy(t, s.Redis.NodeAddr(s.Redis.MasterIndex()))
	}
	t.Cleanup(s.Close)
	if !o.NoHQ {
		s.startHQ()
	}
	// Ports picked free may be taken before posedge binds them: then it
	// exits at once, and the store is configured again on other ports.
	for attempt := 0; ; attempt++ {
		s.writeConfig(o)
		s.Edge = &Proc{Name: "posedge", Args: append([]string{filepath.Join(s.Bin, "posedge"), "run", "--config", s.Config}, o.EdgeArgs...),
			Log: filepath.Join(s.Dir, fmt.Sprintf("posedge%d.log", attempt)), Env: o.Env}
		if s.startEdge() || attempt == 2 {
			break
		}
	}
	if !s.Edge.Running() {
		t.Fatalf("posedge exited at start:\n%s", s.Edge.Tail(3000))
	}
	return s
}

func (s *Store) startHQ() {
	s.HQDB = filepath.Join(s.Dir, "hq.db")
	s.HQAdmin = fmt.Sprintf("127.0.0.1:%d", FreePort(s.t))
	conf := filepath.Join(s.Dir, "hq.yaml")
	db := "sqlite://" + s.HQDB
	if s.opts.HQDatabase != "" {
		db = s.opts.HQDatabase
	}
	body := fmt.Sprintf("nats_url: %q\nstream: \"POS_TXN\"\nsubject_prefix: %q\ndatabase: %q\nadmin:\n  listen: %q\n",
		s.NATS.URL(), s.opts.SubjectPrefix, db, s.HQAdmin)
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		s.t.Fatal(err)
	}
	s.HQ = &Proc{Name: "posedge-hq", Args: []string{filepath.Join(s.Bin, "posedge-hq"), "run", "--config", conf},
		Log: filepath.Join(s.Dir, "hq.log")}
	s.StartHQ()
}

// StartHQ (re)starts posedge-hq and waits for its /healthz.
func (s *Store) StartHQ() {
	s.t.Helper()
	s.HQ.Start(s.t)
	WaitFor(s.t, 30*time.Second, "posedge-hq /healthz", func() bool {
		if !s.HQ.Running() {
			s.t.Fatalf("posedge-hq exited:\n%s", s.HQ.Tail(3000))
		}
		return s.DoHQ("", "GET", "/healthz", nil).Status == 200
	})
}

func (s *Store) writeConfig(o StoreOptions) {
	edgePort, adminPort := FreePort(s.t), FreePort(s.t)
	s.EdgeURL = fmt.Sprintf("http://127.0.0.1:%d", edgePort)
	s.AdminURL = fmt.Sprintf("http://127.0.0.1:%d", adminPort)
	var terms strings.Builder
	if len(s.Terminals) == 0 { // a twin keeps the store's terminals and keys
		for i := 1; i <= o.Terminals; i++ {
			id := fmt.Sprintf("T%02d", i)
			s.Terminals = append(s.Terminals, id)
			s.Keys[id] = randHex(16)
		}
	}
	for _, id := range s.Terminals {
		sum := sha256.Sum256([]byte(s.Keys[id]))
		fmt.Fprintf(&terms, "  - {id: %q, key_sha256: %q}\n", id, hex.EncodeToString(sum[:]))
	}
	limits := ""
	if o.Limits != "" {
		limits = "limits:\n" + o.Limits
	}
	var sents []string
	for _, a := range s.Redis.SentinelAddrs() {
		sents = append(sents, fmt.Sprintf("%q", a))
	}
	redisCfg := fmt.Sprintf("sentinels: [%s], master_name: %q, min_replicas_ack: 1", strings.Join(sents, ", "), MasterName)
	if s.RedisProxy != nil {
		redisCfg = fmt.Sprintf("addr: %q, min_replicas_ack: 1", s.RedisProxy.Addr())
	}
	if o.chain != nil {
		redisCfg = fmt.Sprintf("addr: %q, replicas: 0, min_replicas_ack: 0", s.Redis.NodeAddr(0))
	}
	if s.Redis.Password != "" {
		redisCfg += fmt.Sprintf(", password: %q", s.Redis.Password)
	}
	natsURL := s.NATS.URL()
	if o.chain != nil {
		natsURL = o.chain.storeURL(s.StoreID)
	}
	if s.NATSProxy != nil {
		natsURL = "nats://" + s.NATSProxy.Addr()
	}
	s.Config = filepath.Join(s.Dir, "posedge.yaml")
	s.Journal = filepath.Join(s.Dir, "journal.db")
	if o.JournalDir != "" {
		s.Journal = filepath.Join(o.JournalDir, "journal.db")
	}
	cfg := fmt.Sprintf(`store_id: %q
timezone: %q
listen: "127.0.0.1:%d"
admin: {listen: "127.0.0.1:%d"}
redis: {%s}
journal: {path: %q}
hq: {nats_url: %q, batch_size: %d, subject_prefix: %q}
log: {level: "debug"}
terminals:
%s%s
%s`, s.StoreID, o.Timezone, edgePort, adminPort, redisCfg, s.Journal,
		natsURL, o.BatchSize, o.SubjectPrefix, terms.String(), limits, o.Extra)
	if err := os.WriteFile(s.Config, []byte(cfg), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// StartTwin starts a second posedge of the same store (same store_id and
// terminals, its own journal, listeners and node_id) sharing the store's
// Redis, NATS and posedge-hq: two daemons on one Redis.
func (s *Store) StartTwin(nodeID int) *Store {
	s.t.Helper()
	tw := &Store{t: s.t, Dir: filepath.Join(s.Dir, fmt.Sprintf("node%d", nodeID)), StoreID: s.StoreID,
		Redis: s.Redis, NATS: s.NATS, NATSProxy: s.NATSProxy, RedisProxy: s.RedisProxy, HQDB: s.HQDB, HQAdmin: s.HQAdmin, Bin: s.Bin,
		Terminals: s.Terminals, Keys: s.Keys, client: s.client, opts: s.opts}
	tw.opts.Extra = fmt.Sprintf("node_id: %d\n%s", nodeID, s.opts.Extra)
	if err := os.MkdirAll(tw.Dir, 0o755); err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(tw.Close)
	for attempt := 0; ; attempt++ {
		tw.writeConfig(tw.opts)
		tw.Edge = &Proc{Name: fmt.Sprintf("posedge-node%d", nodeID), Args: []string{filepath.Join(s.Bin, "posedge"), "run", "--config", tw.Config},
			Log: filepath.Join(tw.Dir, fmt.Sprintf("posedge%d.log", attempt))}
		if tw.startEdge() || attempt == 2 {
			break
		}
	}
	if !tw.Edge.Running() {
		s.t.Fatalf("posedge node %d exited at start:\n%s", nodeID, tw.Edge.Tail(3000))
	}
	return tw
}

// AddTerminals configures n more terminals (the next T<k>, each a fresh
// key) and restarts posedge on the new configuration: SIGKILL, then a
// start on fresh ports (EdgeURL and AdminURL change).
func (s *Store) AddTerminals(n int) {
	s.t.Helper()
	s.Edge.Kill()
	for range n {
		id := fmt.Sprintf("T%02d", len(s.Terminals)+1)
		s.Terminals = append(s.Terminals, id)
		s.Keys[id] = randHex(16)
	}
	for attempt := 0; ; attempt++ {
		s.writeConfig(s.opts)
		if s.startEdge() || attempt == 2 {
			break
		}
	}
	if !s.Edge.Running() {
		s.t.Fatalf("posedge exited at start with %d terminals:\n%s", len(s.Terminals), s.Edge.Tail(3000))
	}
}

// StartEdge (re)starts posedge and waits for /readyz.
func (s *Store) StartEdge() {
	s.t.Helper()
	if !s.startEdge() {
		s.t.Fatalf("posedge exited:\n%s", s.Edge.Tail(3000))
	}
}

// startEdge starts posedge and waits for /readyz; false when the process
// exited instead.
func (s *Store) startEdge() bool {
	s.t.Helper()
	s.Edge.Start(s.t)
	ok := false
	WaitFor(s.t, 30*time.Second, "posedge /readyz", func() bool {
		if !s.Edge.Running() {
			return true
		}
		ok = s.Admin("GET", "/readyz", nil).Status == 200
		return ok
	})
	return ok
}

// Close stops the processes of the store; Redis and NATS stop with their
// own cleanups. Logs of a failed test are attached.
func (s *Store) Close() {
	for _, p := range []*Proc{s.Edge, s.HQ} {
		if p != nil {
			p.Kill()
		}
	}
	if dir := os.Getenv("POSEDGE_TEST_LOGS"); dir != "" {
		// Keep whole logs for a post-mortem: POSEDGE_TEST_LOGS=/tmp/logs go test ...
		for _, p := range []*Proc{s.Edge, s.HQ} {
			if p != nil {
				if b, err := os.ReadFile(p.Log); err == nil {
					name := strings.NewReplacer("/", "_").Replace(s.t.Name()) + "-" + p.Name + ".log"
					_ = os.WriteFile(filepath.Join(dir, name), b, 0o644)
				}
			}
		}
	}
	if s.t.Failed() {
		for _, p := range []*Proc{s.Edge, s.HQ} {
			if p != nil {
				s.t.Logf("--- %s log tail:\n%s", p.Name, p.Tail(4000))
			}
		}
	}
}

// Resp is one HTTP answer.
type Resp struct {
	Status int
	Header http.Header
	Body   []byte
	Err    error
}

// JSON decodes the body as an object.
func (r Resp) JSON() map[string]any {
	var m map[string]any
	_ = json.Unmarshal(r.Body, &m)
	return m
}

// Code is the error code of an error body, or "".
func (r Resp) Code() string {
	if e, ok := r.JSON()["error"].(map[string]any); ok {
		s, _ := e["code"].(string)
		return s
	}
	return ""
}

// Flow is the flow number of a sale or refund body, or "".
func (r Resp) Flow() string {
	f, _ := r.JSON()["flow_no"].(string)
	return f
}

// Do sends one request; body may be nil, []byte, string or a value to
// marshal as JSON. The request and its answer are checked against
// docs/openapi.yaml (StoreOptions.API): a request the description
// rejects fails the test, unless sent with DoInvalid.
func (s *Store) Do(base, auth, method, path string, body any, hdr map[string]string) Resp {
	s.t.Helper()
	return s.do(context.Background(), base, auth, method, path, body, hdr)
}

// DoInvalid sends a request the test means to break the description: the
// description must reject it and the server answer 4xx.
func (s *Store) DoInvalid(base, auth, method, path string, body any, hdr map[string]string) Resp {
	s.t.Helper()
	return s.do(Invalid(context.Background()), base, auth, method, path, body, hdr)
}

// listener names the listener base is the address of.
func (s *Store) listener(ctx context.Context, base string) string {
	if l, ok := ctx.Value(listenerKey{}).(string); ok {
		return l
	}
	switch base {
	case s.EdgeURL:
		return apispec.Terminal
	case s.AdminURL:
		return apispec.Admin
	case "http://" + s.HQAdmin:
		return apispec.HQ
	}
	return ""
}

func (s *Store) do(ctx context.Context, base, auth, method, path string, body any, hdr map[string]string) Resp {
	s.t.Helper()
	var raw []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		raw, _ = json.Marshal(b)
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
	if err != nil {
		return Resp{Err: err}
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := s.client.Do(req)
	if err != nil {
		s.opts.API.Exchange(s.t, s.listener(ctx, base), IsInvalid(ctx), req, raw, nil, nil)
		return Resp{Err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return Resp{Err: err}
	}
	s.opts.API.Exchange(s.t, s.listener(ctx, base), IsInvalid(ctx), req, raw, res, b)
	return Resp{Status: res.StatusCode, Header: res.Header, Body: b}
}

// DoHQ calls the admin API of a posedge-hq at addr (host:port; "" is
// the store's own), checked against docs/openapi-hq.yaml.
func (s *Store) DoHQ(addr, method, path string, body any) Resp {
	s.t.Helper()
	if addr == "" {
		addr = s.HQAdmin
	}
	return s.do(context.WithValue(context.Background(), listenerKey{}, apispec.HQ), "http://"+addr, "", method, path, body, nil)
}

type listenerKey struct{}

// CheckingURL is the address of a reverse proxy to listener
// (apispec.Terminal or apispec.Admin) that checks every exchange like Do,
// for clients the test does not hold (curl).
func (s *Store) CheckingURL(listener string) string {
	s.t.Helper()
	target := s.EdgeURL
	if listener == apispec.Admin {
		target = s.AdminURL
	}
	return s.opts.API.StartCheckingProxy(s.t, listener, target).URL
}

// T calls the terminal API as terminal id.
func (s *Store) T(id, method, path string, body any, hdr map[string]string) Resp {
	return s.Do(s.EdgeURL, s.Keys[id], method, path, body, hdr)
}

// TInvalid is T for a request the test means to break the description.
func (s *Store) TInvalid(id, method, path string, body any, hdr map[string]string) Resp {
	s.t.Helper()
	return s.DoInvalid(s.EdgeURL, s.Keys[id], method, path, body, hdr)
}

// AdminInvalid is Admin for a request the test means to break the
// description.
func (s *Store) AdminInvalid(method, path string, body any) Resp {
	s.t.Helper()
	return s.DoInvalid(s.AdminURL, "", method, path, body, nil)
}

// Admin calls the admin API.
func (s *Store) Admin(method, path string, body any) Resp {
	return s.Do(s.AdminURL, "", method, path, body, nil)
}

// PutItem upserts an item through the admin API.
func (s *Store) PutItem(barcode string, price, stock int64) {
	s.t.Helper()
	r := s.Admin("PUT", "/admin/v1/items/"+barcode, map[string]any{"name": "item " + barcode, "price_cents": price, "stock": stock})
	if r.Status != 200 {
		s.t.Fatalf("PUT item %s: %d %s %v", barcode, r.Status, r.Body, r.Err)
	}
}

// SaleBody is a one-line cash sale.
func SaleBody(barcode string, qty, price int64) map[string]any {
	return map[string]any{"lines": []map[string]any{{"barcode": barcode, "qty": qty, "price_cents": price}},
		"total_cents": qty * price, "tender": "cash"}
}

// Sale posts a one-line sale with an Idempotency-Key.
func (s *Store) Sale(term, key, barcode string, qty, price int64) Resp {
	return s.T(term, "POST", "/v1/sales", SaleBody(barcode, qty, price), map[string]string{"Idempotency-Key": key})
}

// HQRows reads the HQ database: flow_no → rows, and the net cents.
func (s *Store) HQRows() (map[string]int, int64) {
	s.t.Helper()
	db, err := sql.Open("sqlite", "file:"+s.HQDB+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		s.t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT flow_no, total_cents, kind FROM transactions WHERE store_id = ?`, s.StoreID)
	if err != nil {
		return map[string]int{}, 0 // not created yet
	}
	defer rows.Close()
	got := map[string]int{}
	var sum int64
	for rows.Next() {
		var f, kind string
		var c int64
		if err := rows.Scan(&f, &c, &kind); err != nil {
			s.t.Fatal(err)
		}
		got[f]++
		if kind == "refund" {
			sum -= c
		} else {
			sum += c
		}
	}
	return got, sum
}

// HQBodies is every transaction HQ holds for the store, flow number to the
// stored JSON body, for history checkers (internal/moneycheck).
func (s *Store) HQBodies() map[string][]byte {
	s.t.Helper()
	db, err := sql.Open("sqlite", "file:"+s.HQDB+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		s.t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT flow_no, body FROM transactions WHERE store_id = ?`, s.StoreID)
	if err != nil {
		return map[string][]byte{} // not created yet
	}
	defer rows.Close()
	got := map[string][]byte{}
	for rows.Next() {
		var f string
		var b []byte
		if err := rows.Scan(&f, &b); err != nil {
			s.t.Fatal(err)
		}
		got[f] = b
	}
	return got
}

// WaitHQ waits until HQ holds every flow number in want and returns the
// rows per flow number.
func (s *Store) WaitHQ(want []string, d time.Duration) map[string]int {
	s.t.Helper()
	var got map[string]int
	WaitFor(s.t, d, fmt.Sprintf("HQ to hold %d transactions", len(want)), func() bool {
		got, _ = s.HQRows()
		for _, f := range want {
			if got[f] == 0 {
				return false
			}
		}
		return true
	})
	return got
}

// JournalRows counts the journal's rows (read-only, beside the daemon).
func (s *Store) JournalRows(where string, args ...any) int {
	s.t.Helper()
	db, err := sql.Open("sqlite", "file:"+s.Journal+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		s.t.Fatal(err)
	}
	defer db.Close()
	var n int
	q := `SELECT COUNT(*) FROM txns`
	if where != "" {
		q += " WHERE " + where
	}
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		s.t.Fatalf("journal query: %v", err)
	}
	return n
}

// HQConflicts counts the store's rows in HQ's conflicts table: bodies
// that arrived under a flow number HQ already held with another body (a
// flow number issued twice).
func (s *Store) HQConflicts() int {
	s.t.Helper()
	db, err := sql.Open("sqlite", "file:"+s.HQDB+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		s.t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM conflicts WHERE store_id = ?`, s.StoreID).Scan(&n); err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return 0 // HQ has not created its schema yet
		}
		s.t.Fatalf("read HQ conflicts: %v", err)
	}
	return n
}
