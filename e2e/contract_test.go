package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/posedge/posedge/internal/testenv"
)

// Payment tokens: 201 {token, expires_at} five minutes ahead; a token
// keys one sale of the terminal it was issued to; another terminal's use
// and use after expiry are 400 token_invalid. Expiry is brought forward
// by shortening the token's TTL in Redis (the daemon keeps no copy).
func TestPaymentTokenExpiry(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: looseMix})
	s.PutItem("TK1", 100, plenty)
	issue := func() string {
		t.Helper()
		before := time.Now()
		r := s.T("T01", "POST", "/v1/payment-tokens", nil, nil)
		tok, _ := r.JSON()["token"].(string)
		exp, err := time.Parse(time.RFC3339Nano, fmt.Sprint(r.JSON()["expires_at"]))
		if r.Status != 201 || tok == "" || err != nil {
			t.Fatalf("POST /v1/payment-tokens: %d %s (%v)", r.Status, r.Body, err)
		}
		if lo, hi := before.Add(5*time.Minute-2*time.Second), time.Now().Add(5*time.Minute+2*time.Second); exp.Before(lo) || exp.After(hi) {
			t.Fatalf("expires_at %v, want five minutes from now (%v … %v)", exp, lo, hi)
		}
		return tok
	}
	tok := issue()
	if r := s.Sale("T02", tok, "TK1", 1, 100); r.Status != 400 || r.Code() != "token_invalid" {
		t.Fatalf("another terminal's token: %d %s", r.Status, r.Body)
	}
	if r := s.Sale("T01", tok, "TK1", 1, 100); r.Status != 201 {
		t.Fatalf("sale keyed by its token: %d %s", r.Status, r.Body)
	}

	late := issue()
	key := fmt.Sprintf("pe:{%s}:token:%s", s.StoreID, late)
	m := s.Redis.Master()
	if ok, err := m.PExpire(context.Background(), key, time.Millisecond).Result(); err != nil || !ok {
		t.Fatalf("shorten the TTL of %s: %v %v (the token is not where the key layout says)", key, ok, err)
	}
	testenv.WaitFor(t, 5*time.Second, "the token to expire", func() bool {
		return m.Exists(context.Background(), key).Val() == 0
	})
	if r := s.Sale("T01", late, "TK1", 1, 100); r.Status != 400 || r.Code() != "token_invalid" {
		t.Fatalf("an expired token: %d %s", r.Status, r.Body)
	}
	if n := s.JournalRows(""); n != 1 {
		t.Fatalf("journal holds %d sales, want the one keyed by a live token", n)
	}
}

// A batch body over 1 MiB is 413 body_too_large and changes nothing; a
// batch sale beyond the stock is taken (it already happened), the stock
// goes negative and the negative-stock metric counts the line.
func TestBatchTooLargeAndNegativeStock(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: looseMix})
	s.PutItem("NS1", 100, 1)
	sale := testenv.SaleBody("NS1", 3, 100)
	sale["idempotency_key"] = "neg-1"
	huge := map[string]any{"sales": []any{sale}, "pad": strings.Repeat("x", 1<<20)}
	r := s.TInvalid("T01", "POST", "/v1/sales/batch", huge, nil)
	if r.Status != 413 || r.Code() != "body_too_large" {
		t.Fatalf("batch over 1 MiB: %d %.200s", r.Status, r.Body)
	}
	if n := s.JournalRows(""); n != 0 {
		t.Fatalf("a refused batch journaled %d sales", n)
	}
	before := metric(t, s, "posedge_negative_stock_lines_total")
	r = s.T("T01", "POST", "/v1/sales/batch", map[string]any{"sales": []any{sale}}, nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"status":201`) {
		t.Fatalf("batch beyond the stock: %d %s", r.Status, r.Body)
	}
	item := s.T("T01", "GET", "/v1/items/NS1", nil, nil)
	if num(item.JSON()["stock"]) != -2 {
		t.Fatalf("stock after selling 3 of 1: %s, want -2", item.Body)
	}
	if d := metric(t, s, "posedge_negative_stock_lines_total") - before; d != 1 {
		t.Fatalf("negative-stock metric grew by %v, want 1", d)
	}
}

// A store far from UTC: the business day and the hourly stats follow the
// local clock of `timezone`. The zone is picked so that its date differs
// from UTC's at the time of the test.
func TestNonUTCTimezone(t *testing.T) {
	zone := "Pacific/Kiritimati" // UTC+14: another date from 10:00 UTC on
	if time.Now().UTC().Hour() < 12 {
		zone = "Etc/GMT+12" // UTC-12: another date until 12:00 UTC
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	s := startStore(t, testenv.StoreOptions{Limits: looseMix, Timezone: zone})
	s.PutItem("TZ1", 250, plenty)
	now := time.Now()
	if r := s.Sale("T01", "tz-1", "TZ1", 2, 250); r.Status != 201 {
		t.Fatalf("sale: %d %s", r.Status, r.Body)
	}
	local, utc := now.In(loc).Format("20060102"), now.UTC().Format("20060102")
	if local == utc {
		t.Fatalf("%s and UTC share the date %s: the test proves nothing", zone, local)
	}
	var day struct {
		Date   string `json:"date"`
		Totals counts `json:"totals"`
	}
	_ = json.Unmarshal(s.Admin("GET", "/admin/v1/stats/daily", nil).Body, &day)
	if day.Date != local || day.Totals.Sales != 1 || day.Totals.SalesCents != 500 {
		t.Fatalf("today's stats in %s: %+v, want date %s with the sale", zone, day, local)
	}
	_ = json.Unmarshal(s.Admin("GET", "/admin/v1/stats/daily?date="+utc, nil).Body, &day)
	if day.Totals.Sales != 0 {
		t.Fatalf("UTC's date %s holds %+v: the day is not the store's", utc, day.Totals)
	}
	var hourly struct {
		Hours map[string]counts `json:"hours"`
	}
	_ = json.Unmarshal(s.Admin("GET", "/admin/v1/stats/hourly?date="+local, nil).Body, &hourly)
	h := now.In(loc).Format("15")
	if hourly.Hours[h].Sales != 1 {
		t.Fatalf("hour %s (local) holds %+v; hours %v", h, hourly.Hours[h], hourly.Hours)
	}
	if n := s.JournalRows("business_day = ? AND business_hour = ?", local, h); n != 1 {
		t.Fatalf("the journal does not file the sale on %s hour %s", local, h)
	}
}

// check-config: 0 for a valid file, 1 naming the key for an invalid one
// and naming the file when it is missing. journal stats and export on a
// store that sold: the figures and one line per transaction.
func TestCheckConfigAndJournalCommands(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: looseMix})
	if out, code := posedgeCmd(t, 30*time.Second, "check-config", "--config", s.Config); code != 0 {
		t.Fatalf("check-config of the store's config: exit %d\n%s", code, out)
	}
	body, _ := os.ReadFile(s.Config)
	bad := filepath.Join(s.Dir, "bad.yaml")
	_ = os.WriteFile(bad, []byte(strings.Replace(string(body), `timezone: "UTC"`, `timezone: "Mars/Olympus"`, 1)), 0o644)
	if out, code := posedgeCmd(t, 30*time.Second, "check-config", "--config", bad); code != 1 || !strings.Contains(out, "timezone") {
		t.Fatalf("check-config of a bad timezone: exit %d\n%s", code, out)
	}
	missing := filepath.Join(s.Dir, "missing.yaml")
	if out, code := posedgeCmd(t, 30*time.Second, "check-config", "--config", missing); code != 1 || !strings.Contains(out, missing) {
		t.Fatalf("check-config of a missing file: exit %d\n%s", code, out)
	}

	s.PutItem("JC1", 300, plenty)
	flows := sellN(t, s, "jc", "JC1", 6, 300)
	s.WaitHQ(flows, 60*time.Second)
	var st struct {
		Rows    int64 `json:"rows"`
		Backlog int64 `json:"backlog"`
	}
	testenv.WaitForState(t, 30*time.Second, "journal stats with every sale acknowledged", func() (bool, string) {
		out, code := posedgeCmd(t, 30*time.Second, "journal", "stats", "--config", s.Config)
		err := json.Unmarshal([]byte(out), &st)
		return code == 0 && err == nil && st.Rows == 6 && st.Backlog == 0, out
	})
	out, code := posedgeCmd(t, 30*time.Second, "journal", "export", "--config", s.Config)
	if code != 0 {
		t.Fatalf("journal export: exit %d\n%s", code, out)
	}
	seen := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e struct {
			FlowNo string          `json:"flow_no"`
			State  string          `json:"state"`
			Body   json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.State != "acked" || !strings.Contains(string(e.Body), e.FlowNo) {
			t.Fatalf("export line %q (%v)", sc.Text(), err)
		}
		seen[e.FlowNo]++
	}
	for _, f := range flows {
		if seen[f] != 1 {
			t.Fatalf("export holds %s %d times:\n%s", f, seen[f], out)
		}
	}
	if len(seen) != len(flows) {
		t.Fatalf("export holds %d transactions, %d were sold", len(seen), len(flows))
	}
}

// posedge → posedge-hq on PostgreSQL, on a subject prefix of the store's
// own: the realistic mix reaches HQ's PostgreSQL once each, with the
// same net cents and no conflict. posedge-hq's stream only takes
// <prefix>.>, so a posedge publishing on the default prefix would leave
// HQ empty.
func TestCustomSubjectPrefixToPostgresHQ(t *testing.T) {
	pg := testenv.StartPostgres(t)
	url := pg.NewDatabase(t)
	s := startStore(t, testenv.StoreOptions{Limits: looseMix, SubjectPrefix: "acme.stores.txn", HQDatabase: url})
	putMixItems(s)
	ctx, cancel := context.WithCancel(context.Background())
	mt := runMix(t, ctx, s, 4, "pg", testSeed(t))
	time.Sleep(2 * time.Second)
	cancel()
	told := mt.wait()
	t.Log(mt.summary())
	var net int64
	for _, tx := range told {
		if tx.Kind == "refund" {
			net -= tx.TotalCents
		} else {
			net += tx.TotalCents
		}
	}
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	testenv.WaitForState(t, 60*time.Second, "PostgreSQL at HQ to hold every transaction once", func() (bool, string) {
		var rows, distinct, cents int64
		err := conn.QueryRow(context.Background(), `SELECT COUNT(*), COUNT(DISTINCT flow_no),
			COALESCE(SUM(CASE WHEN kind = 'refund' THEN -total_cents ELSE total_cents END), 0)
			FROM transactions WHERE store_id = $1`, s.StoreID).Scan(&rows, &distinct, &cents)
		state := fmt.Sprintf("%d rows, %d distinct, net %d (want %d, net %d) %v", rows, distinct, cents, len(told), net, err)
		return err == nil && rows == int64(len(told)) && distinct == rows && cents == net, state
	})
	var conflicts int64
	if err := conn.QueryRow(context.Background(), `SELECT COUNT(*) FROM conflicts WHERE store_id = $1`, s.StoreID).Scan(&conflicts); err != nil || conflicts != 0 {
		t.Fatalf("conflicts at HQ: %d %v", conflicts, err)
	}
}

// After a failover that leaves the new master one replica of the two the
// store should have, status is WARN (exit 1), in normal mode, and says so.
func TestStatusWarnsWhenFailoverLeavesOneReplica(t *testing.T) {
	s := startStore(t, testenv.StoreOptions{Limits: looseMix})
	testenv.WaitFor(t, 30*time.Second, "status ok", func() bool {
		_, code, _ := posedgeStatus(t, s)
		return code == 0
	})
	s.Redis.KillNode(s.Redis.MasterIndex())
	testenv.WaitForState(t, 60*time.Second, "status warn with one replica", func() (bool, string) {
		st, code, out := posedgeStatus(t, s)
		warned := false
		for _, c := range st.Checks {
			warned = warned || (c.Status == "warn" && strings.Contains(c.Detail, "replica"))
		}
		return code == 1 && st.Status == "warn" && st.Mode == "normal" && warned, out
	})
}
