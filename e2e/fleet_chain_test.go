package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/posedge/posedge/internal/testenv"
)

var chainIDs = []string{"S001", "S002", "S003"}

// fleetEntry is what the test reads of one store of the fleet view.
type fleetEntry struct {
	StoreID       string  `json:"store_id"`
	Version       string  `json:"version"`
	LastHeartbeat *string `json:"last_heartbeat_at"`
	ClockOffsetMS *int64  `json:"clock_offset_ms"`
	Transactions  int64   `json:"transactions"`
	Silent        bool    `json:"silent"`
}

// A chain of three stores as deployed: real posedge ×3 (each its own
// Redis), one posedge-hq, one NATS whose users are docs/security.md's —
// the per-store template for each store, the restricted set for
// posedge-hq. All three stores are in GET /v1/stores and `posedge-hq
// stores` within 15 s of starting; S003, whose heartbeat clock runs 9 s
// ahead (POSEDGE_TEST_CLOCK_SKEW, test-only), shows that offset; a price
// set at HQ reaches every store's till and a stock adjustment every
// store made reaches HQ, all under those permissions; S002 stopped turns
// silent after silent_after (4 s here) while the others, selling, do
// not, and `posedge-hq stores` exits 1 naming it first.
func TestFleetChain(t *testing.T) {
	c := testenv.StartChain(t, testenv.ChainOptions{Bin: bin, API: api,
		NATSConf:  testenv.WithOperator(t, testenv.SecurityTemplateFor(t, securityDoc, chainIDs...)),
		HQUser:    "hq:" + testenv.DocumentedPassword,
		StoreUser: func(id string) string { return strings.ToLower(id) + ":" + testenv.DocumentedPassword },
		HQExtra:   "silent_after: \"4s\"\n"})
	start := time.Now()
	stores := map[string]*testenv.Store{}
	for _, id := range chainIDs {
		o := testenv.StoreOptions{Terminals: 1}
		if id == "S003" {
			o.Env = []string{"POSEDGE_TEST_CLOCK_SKEW=9s"}
		}
		stores[id] = c.AddStore(id, o)
	}
	first := stores["S001"]
	fleet := func() map[string]fleetEntry {
		r := first.DoHQ("", "GET", "/v1/stores", nil)
		var v struct{ Stores []fleetEntry }
		if r.Status != 200 || json.Unmarshal(r.Body, &v) != nil {
			return nil
		}
		out := map[string]fleetEntry{}
		for _, e := range v.Stores {
			out[e.StoreID] = e
		}
		return out
	}
	cli := func(args ...string) (int, string) {
		cmd := exec.Command(filepath.Join(bin, "posedge-hq"), append([]string{"stores", "--config", c.HQConfig}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		return code, out.String()
	}

	// All three, each with a heartbeat, within 15 s of starting.
	testenv.WaitFor(t, 15*time.Second-time.Since(start), "three stores with a heartbeat in GET /v1/stores", func() bool {
		f := fleet()
		for _, id := range chainIDs {
			if e, ok := f[id]; !ok || e.LastHeartbeat == nil || e.Version == "" {
				return false
			}
		}
		return true
	})
	code, out := cli()
	for _, id := range chainIDs {
		if !strings.Contains(out, id) {
			t.Errorf("posedge-hq stores lacks %s (exit %d):\n%s", id, code, out)
		}
	}
	t.Logf("three stores in the fleet view %v after starting; posedge-hq stores (exit %d):\n%s", time.Since(start).Round(time.Millisecond), code, out)

	// The skewed clock shows; the others' clocks are in sync.
	f := fleet()
	for _, id := range chainIDs {
		e := f[id]
		want, tol := int64(0), int64(1500)
		if id == "S003" {
			want = 9000
		}
		if e.ClockOffsetMS == nil || *e.ClockOffsetMS < want-tol || *e.ClockOffsetMS > want+tol {
			t.Errorf("%s clock_offset_ms %v, want about %d", id, e.ClockOffsetMS, want)
		}
	}
	if !strings.Contains(out, "clock off") {
		t.Errorf("posedge-hq stores does not call S003's clock off:\n%s", out)
	}

	// The catalog under the per-store template: a price set at HQ is at
	// every store's till.
	if r := first.DoHQ("", "PUT", "/admin/v1/catalog/F1", map[string]any{"name": "Fleet tea", "price_cents": 275}); r.Status != 200 {
		t.Fatalf("HQ PUT: %d %s %v", r.Status, r.Body, r.Err)
	}
	for _, id := range chainIDs {
		s := stores[id]
		testenv.WaitFor(t, 60*time.Second, id+": F1 at 275 at the till", func() bool {
			r := s.T("T01", "GET", "/v1/items/F1", nil, nil)
			return r.Status == 200 && r.JSON()["price_cents"] == 275.0
		})
	}
	// Stock adjustments and sales under the template reach HQ.
	for _, id := range chainIDs {
		s := stores[id]
		if r := s.Admin("POST", "/admin/v1/items/F1/stock-adjustments",
			map[string]any{"delta": 20, "reason": "receiving", "idempotency_key": "grn-" + id}); r.Status != 201 {
			t.Fatalf("%s: receive F1: %d %s", id, r.Status, r.Body)
		}
		if r := s.Sale("T01", "k-"+id, "F1", 1, 275); r.Status != 201 {
			t.Fatalf("%s: sale: %d %s", id, r.Status, r.Body)
		}
	}
	for _, id := range chainIDs {
		s := stores[id]
		testenv.WaitFor(t, 30*time.Second, id+": adjustment and sale at HQ", func() bool {
			return len(hqAdjustments(t, s)) == 1 && fleet()[id].Transactions == 1
		})
	}

	// S002 stops; the others keep selling (a sale every second, so
	// they are heard from although heartbeats come only every minute).
	stores["S002"].Edge.Kill()
	stopped := time.Now()
	var n int
	testenv.WaitFor(t, 30*time.Second, "S002 silent, S001 and S003 not", func() bool {
		n++
		for _, id := range []string{"S001", "S003"} {
			if r := stores[id].Sale("T01", fmt.Sprintf("k-%s-%d", id, n), "F1", 1, 275); r.Status != 201 {
				t.Fatalf("%s: sale: %d %s", id, r.Status, r.Body)
			}
		}
		time.Sleep(500 * time.Millisecond)
		f := fleet()
		return f["S002"].Silent && !f["S001"].Silent && !f["S003"].Silent
	})
	t.Logf("S002 silent %v after it stopped (silent_after 4s)", time.Since(stopped).Round(time.Millisecond))
	code, out = cli()
	if lines := strings.Split(out, "\n"); code != 1 || len(lines) < 3 || !strings.HasPrefix(lines[2], "S002") || !strings.Contains(lines[2], "silent") {
		t.Errorf("posedge-hq stores with S002 silent: exit %d, want 1 and S002 first:\n%s", code, out)
	}

	// posedge-hq's restricted user is all it needed: no permission
	// violation in its log, and it cannot publish as a store.
	if strings.Contains(strings.ToLower(c.HQ.Tail(1<<20)), "permissions violation") {
		t.Errorf("posedge-hq hit a permission violation:\n%s", grepLines(c.HQ.Tail(1<<20), "ermission"))
	}
	for _, id := range chainIDs {
		if l := stores[id].Edge.Tail(1 << 20); strings.Contains(strings.ToLower(l), "permissions violation") {
			t.Errorf("%s hit a permission violation:\n%s", id, grepLines(l, "ermission"))
		}
	}
	// HQ answers a store's "have" query (the replay's, after an
	// ambiguous send) through its restricted user: subscribe on
	// posedge.hq.have.*, reply by allow_responses only.
	snc, err := nats.Connect(fmt.Sprintf("nats://s001:%s@127.0.0.1:%d", testenv.DocumentedPassword, c.NATS.Port), nats.CustomInboxPrefix("_INBOX.S001"))
	if err != nil {
		t.Fatal(err)
	}
	defer snc.Close()
	flow := stores["S001"].Sale("T01", "k-have", "F1", 1, 275).Flow()
	testenv.WaitFor(t, 30*time.Second, "HQ to hold S001's flow "+flow, func() bool {
		m, err := snc.Request("posedge.hq.have.S001", []byte(`{"store_id":"S001","flow_nos":["`+flow+`"]}`), 2*time.Second)
		return err == nil && strings.Contains(string(m.Data), flow)
	})

	violated := make(chan error, 4)
	hnc, err := nats.Connect(fmt.Sprintf("nats://hq:%s@127.0.0.1:%d", testenv.DocumentedPassword, c.NATS.Port),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violated <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer hnc.Close()
	hnc.Publish("pos.txn.S001", []byte(`{}`))
	hnc.Flush()
	select {
	case err := <-violated:
		if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			t.Errorf("HQ's user publishing as S001: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("HQ's user published on pos.txn.S001 without a permission violation")
	}
}
