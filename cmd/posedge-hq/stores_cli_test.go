package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/wire"

	"github.com/posedge/posedge/internal/testenv/golden"
)

// fleetPublisher publishes on NATS what stores send, as a store's
// replayer does (subjects, headers, bodies of sync/wire).
type fleetPublisher struct {
	t  *testing.T
	js jetstream.JetStream
}

func (p fleetPublisher) publish(subject, msgID string, v any) {
	p.t.Helper()
	if err := p.try(subject, msgID, v); err != nil {
		p.t.Fatalf("publish %s: %v", subject, err)
	}
}

// try publishes and returns the error (safe off the test's goroutine).
func (p fleetPublisher) try(subject, msgID string, v any) error {
	m := nats.NewMsg(subject)
	if msgID != "" {
		m.Header.Set(wire.HeaderMsgID, msgID)
	}
	m.Header.Set(wire.HeaderSchema, wire.SchemaV1)
	m.Data, _ = json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.js.PublishMsg(ctx, m)
	return err
}

func (p fleetPublisher) sale(store, flow string, cents int64) {
	p.publish(wire.TxnSubject(wire.DefaultSubjectPrefix, store), wire.MsgID(store, flow), map[string]any{
		"flow_no": flow, "store_id": store, "terminal_id": "T01", "kind": "sale", "total_cents": cents, "tender": "cash",
		"created_at": time.Now().UTC().Format(time.RFC3339Nano),
		"lines":      []map[string]any{{"barcode": "A1", "qty": 1, "price_cents": cents}},
	})
}

func (p fleetPublisher) heartbeat(store, version string, skew time.Duration) error {
	now := time.Now().Add(skew).UTC().Format(time.RFC3339Nano)
	return p.try(wire.HeartbeatSubject(wire.DefaultSubjectPrefix, store), "", wire.Heartbeat{StoreID: store, SentAt: now,
		StoreClock: now, Version: version, HeartbeatFormat: wire.HeartbeatFormat2})
}

// `posedge-hq stores` as an HQ engineer runs it: the built binary asking
// a real posedge-hq (over its admin listener) about stores that sent real
// messages over NATS. One store of each kind of trouble, listed worst
// first (golden output, ages and clock readings masked), exit 1 while any
// store is silent, incomplete or conflicting, 0 for an empty fleet, 3 when
// posedge-hq is not there, and --json the same entries in the same order.
func TestStoresCommand(t *testing.T) {
	n := testenv.StartNATS(t)
	dir := t.TempDir()
	admin := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	conf := filepath.Join(dir, "hq.yaml")
	cfg := fmt.Sprintf("nats_url: %q\ndatabase: %q\nadmin:\n  listen: %q\nsilent_after: \"3s\"\nduplicate_window: \"1s\"\n",
		n.URL(), "sqlite://"+filepath.Join(dir, "hq.db"), admin)
	if err := os.WriteFile(conf, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}

	// Before posedge-hq runs: UNKNOWN, 3, with advice.
	code, out, errOut := runHQ(t, "stores", "--config", conf, "--timeout", "2s")
	if code != 3 || out != "" || !strings.Contains(errOut, "cannot be asked") {
		t.Fatalf("without posedge-hq: exit %d, stdout %q, stderr %q; want 3, UNKNOWN", code, out, errOut)
	}

	p := &hqProc{Proc: &testenv.Proc{Name: "posedge-hq", Args: []string{hqBin, "run", "--config", conf, "--log-format", "json"},
		Log: filepath.Join(dir, "hq.log")}, admin: "http://" + admin}
	p.Start(t)
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("posedge-hq log:\n%s", p.Tail(4000))
		}
	})
	p.waitHealthy(t)

	// Empty fleet: OK.
	if code, out, _ := runHQ(t, "stores", "--config", conf); code != 0 || !strings.Contains(out, "no store heard from yet") {
		t.Fatalf("empty fleet: exit %d, %q", code, out)
	}

	nc, err := nats.Connect(n.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	pub := fleetPublisher{t: t, js: js}

	// S009 sends once and then nothing: silent after 3 s.
	pub.sale("S009", "1", 100)
	if err := pub.heartbeat("S009", "v1.4.0", 0); err != nil {
		t.Fatal(err)
	}
	// S004 sold twice, then its manifest claims three sales: incomplete.
	pub.sale("S004", "1", 100)
	pub.sale("S004", "2", 200)
	pub.publish(wire.ManifestSubject(wire.DefaultSubjectPrefix, "S004"), "", wire.Manifest{StoreID: "S004", TerminalID: "T01",
		Date: "20260520", Sales: 3, SalesCents: 600, FirstFlowNo: "1", LastFlowNo: "3", SentAt: time.Now().UTC().Format(time.RFC3339Nano)})
	// S005 sends flow 1 again with another body past the duplicate
	// window: a conflict.
	pub.sale("S005", "1", 100)
	time.Sleep(1500 * time.Millisecond)
	pub.sale("S005", "1", 999)

	// The live stores keep sending heartbeats, as a daemon does, so
	// only S009 goes silent however slow this machine is.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			pub.heartbeat("S001", "v1.4.0", 0)
			pub.heartbeat("S002", "v1.3.9", 0)             // old version
			pub.heartbeat("S003", "v1.4.0", 8*time.Second) // clock 8 s ahead
			pub.heartbeat("S004", "v1.4.0", 0)
			pub.heartbeat("S005", "v1.4.0", 0)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	defer func() { close(stop); <-done }()

	var lastOut string
	testenv.WaitFor(t, waitLong, "S009 silent, S004 incomplete, S005 conflicting", func() bool {
		_, lastOut, _ = runHQ(t, "stores", "--config", conf)
		return strings.Contains(maskFleet(lastOut), "S009 silent ") && strings.Contains(lastOut, "incomplete") &&
			strings.Contains(lastOut, "conflicts") && strings.Count(lastOut, "\nS00") == 6
	})
	code, out, errOut = runHQ(t, "stores", "--config", conf)
	if code != 1 {
		t.Fatalf("exit %d (stderr %q), want 1 with silent, incomplete and conflicting stores:\n%s", code, errOut, out)
	}
	golden.Check(t, filepath.Join("testdata", "stores-cli.golden"), []byte(maskFleet(out)))

	// --json: the same stores in the same order, offsets as numbers.
	code, js1, _ := runHQ(t, "stores", "--config", conf, "--json")
	var v struct {
		Stores []struct {
			StoreID       string `json:"store_id"`
			ClockOffsetMS *int64 `json:"clock_offset_ms"`
			Silent        bool   `json:"silent"`
		} `json:"stores"`
	}
	if err := json.Unmarshal([]byte(js1), &v); err != nil || code != 1 {
		t.Fatalf("--json: exit %d, %v:\n%s", code, err, js1)
	}
	var order []string
	for _, s := range v.Stores {
		order = append(order, s.StoreID)
		if s.StoreID == "S003" && (s.ClockOffsetMS == nil || *s.ClockOffsetMS < 7000 || *s.ClockOffsetMS > 9500) {
			t.Errorf("S003 clock_offset_ms = %v, want about 8000", s.ClockOffsetMS)
		}
	}
	if got := strings.Join(order, " "); got != "S009 S004 S005 S002 S003 S001" {
		t.Errorf("--json order %s, want worst first S009 S004 S005 S002 S003 S001", got)
	}
}

var (
	ageRE   = regexp.MustCompile(`\b\d+[smhd] ago\b`)
	clockRE = regexp.MustCompile(`[+-]\d+\.\ds\b`)
	spaceRE = regexp.MustCompile(` {2,}`)
)

// maskFleet replaces what changes from run to run (ages, clock
// readings) and the column padding they move.
func maskFleet(s string) string {
	s = ageRE.ReplaceAllString(s, "AGE")
	s = clockRE.ReplaceAllStringFunc(s, func(c string) string {
		f, _ := strconv.ParseFloat(strings.TrimSuffix(c, "s"), 64)
		if f > 5 || f < -5 {
			return "OFF" // the 8 s skew, whatever the transit
		}
		return "SYNC"
	})
	return spaceRE.ReplaceAllString(s, " ")
}
