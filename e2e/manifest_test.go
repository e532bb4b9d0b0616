package e2e

import (
	"context"
	"database/sql"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
	"github.com/posedge/posedge/sync/replay"
	"github.com/posedge/posedge/sync/wire"
)

// completeness is posedge-hq's GET /v1/completeness.
type completeness struct {
	Incomplete []struct {
		StoreID    string `json:"store_id"`
		TerminalID string `json:"terminal_id"`
		Date       string `json:"date"`
		Manifest   struct {
			Sales      int64 `json:"sales"`
			SalesCents int64 `json:"sales_cents"`
		} `json:"manifest"`
		Stored struct {
			Sales      int64 `json:"sales"`
			SalesCents int64 `json:"sales_cents"`
		} `json:"stored"`
	} `json:"incomplete"`
	Silent []struct {
		StoreID string `json:"store_id"`
	} `json:"silent"`
}

func hqCompleteness(t *testing.T, s *testenv.Store) completeness {
	t.Helper()
	r := s.DoHQ("", "GET", "/v1/completeness", nil)
	if r.Status != 200 {
		t.Fatalf("GET /v1/completeness: %d %s %v", r.Status, r.Body, r.Err)
	}
	var c completeness
	if err := json.Unmarshal(r.Body, &c); err != nil {
		t.Fatalf("completeness %s: %v", r.Body, err)
	}
	return c
}

// hqManifests is the sales count of the manifest posedge-hq keeps (the
// newest) per terminal and day of the store, keyed "T01/20261130".
func hqManifests(t *testing.T, s *testenv.Store) map[string]int64 {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+s.HQDB+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT terminal_id || '/' || date, sales FROM manifests WHERE store_id = ?`, s.StoreID)
	if err != nil {
		return nil // not created yet
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var key string
		var n int64
		if err := rows.Scan(&key, &n); err != nil {
			t.Fatal(err)
		}
		out[key] = n
	}
	return out
}

// TestManifestMakesTheDayCompleteAtHQ: after sales, the store's day
// manifests (built from its journal by sync/replay, published on
// pos.txn.<store>.manifest) make posedge-hq report the day complete; a
// manifest whose totals differ from what HQ stored (a sale HQ never got)
// makes it report the day incomplete, with both figures; a newer correct
// manifest makes it complete again.
func TestManifestMakesTheDayCompleteAtHQ(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: loose, Terminals: 2})
	s.PutItem("M1", 125, plenty)
	flows := sellN(t, s, "mf", "M1", 10, 125)
	s.WaitHQ(flows, 60*time.Second)

	ctx := context.Background()
	j, err := journal.Open(ctx, filepath.Join(s.Dir, "journal.db"), journal.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var days []string
	db, err := sql.Open("sqlite", "file:"+filepath.Join(s.Dir, "journal.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(`SELECT DISTINCT business_day FROM txns ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d string
		if err := rows.Scan(&d); err != nil {
			t.Fatal(err)
		}
		days = append(days, d)
	}
	rows.Close()
	db.Close()
	var manifests []wire.Manifest
	for _, d := range days { // one day, two around midnight
		ms, err := replay.Manifests(ctx, j, s.StoreID, d)
		if err != nil {
			t.Fatal(err)
		}
		manifests = append(manifests, ms...)
	}
	if len(manifests) < 2 {
		t.Fatalf("manifests %+v: want one per terminal", manifests)
	}

	nc, err := nats.Connect(s.NATS.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	send := func(m wire.Manifest) {
		t.Helper()
		b, _ := json.Marshal(m)
		msg := nats.NewMsg(wire.ManifestSubject(wire.DefaultSubjectPrefix, s.StoreID))
		msg.Data = b
		msg.Header.Set(wire.HeaderSchema, wire.SchemaV1)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if _, err := js.PublishMsg(pctx, msg); err != nil {
			t.Fatalf("publish manifest: %v", err)
		}
	}
	ours := func(c completeness) int {
		n := 0
		for _, d := range c.Incomplete {
			if d.StoreID == s.StoreID {
				n++
			}
		}
		return n
	}

	for _, m := range manifests {
		send(m)
	}
	testenv.WaitFor(t, 30*time.Second, "HQ to store the manifests", func() bool {
		got := hqManifests(t, s)
		for _, m := range manifests {
			if got[m.TerminalID+"/"+m.Date] != m.Sales {
				return false
			}
		}
		return true
	})
	if c := hqCompleteness(t, s); ours(c) != 0 {
		t.Fatalf("day incomplete with the journal's manifests: %+v", c)
	}

	// The store says T01 sold one sale more than HQ holds.
	wrong := manifests[0]
	wrong.Sales++
	wrong.SalesCents += 125
	wrong.SentAt = time.Now().UTC().Add(time.Second).Format(time.RFC3339Nano)
	send(wrong)
	testenv.WaitFor(t, 30*time.Second, "HQ to report the day incomplete", func() bool { return ours(hqCompleteness(t, s)) == 1 })
	for _, d := range hqCompleteness(t, s).Incomplete {
		if d.StoreID != s.StoreID {
			continue
		}
		if d.TerminalID != wrong.TerminalID || d.Date != wrong.Date || d.Manifest.Sales != wrong.Sales ||
			d.Stored.Sales != wrong.Sales-1 || d.Stored.SalesCents != wrong.SalesCents-125 {
			t.Fatalf("incomplete day %+v, manifest %+v", d, wrong)
		}
	}

	// A newer manifest with the right figures: complete again.
	right := manifests[0]
	right.SentAt = time.Now().UTC().Add(2 * time.Second).Format(time.RFC3339Nano)
	send(right)
	testenv.WaitFor(t, 30*time.Second, "HQ to report the day complete again", func() bool { return ours(hqCompleteness(t, s)) == 0 })
	for _, st := range hqCompleteness(t, s).Silent {
		if st.StoreID == s.StoreID {
			t.Fatalf("store %s reported silent while it sells", s.StoreID)
		}
	}
}

// `posedge sync manifest` publishes the day's manifests on demand.
func TestSyncManifestCommand(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{})
	s.PutItem("MF1", 100, 10)
	if r := s.Sale("T01", "mf-1", "MF1", 1, 100); r.Status != 201 {
		t.Fatalf("sale: %d %s", r.Status, r.Body)
	}
	// The replay connects to HQ after a jittered start: until then the
	// command says HQ is unavailable, and says so clearly.
	var out []byte
	testenv.WaitFor(t, 20*time.Second, "posedge sync manifest to publish", func() bool {
		var err error
		out, err = exec.Command(filepath.Join(bin, "posedge"), "sync", "manifest", "--config", s.Config).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "hq_unavailable") {
			t.Fatalf("sync manifest: %v\n%s", err, out)
		}
		return err == nil
	})
	if !strings.Contains(string(out), "published") {
		t.Fatalf("sync manifest said %s", out)
	}
	if r := s.AdminInvalid("POST", "/admin/v1/sync/manifest?date=2026-01-01", nil); r.Status != 400 {
		t.Fatalf("bad date: %d %s", r.Status, r.Body)
	}
}
