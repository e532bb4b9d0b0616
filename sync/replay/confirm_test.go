package replay_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/offline/journal"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/replay"
	"github.com/posedge/posedge/sync/wire"
)

// confirmWindow is the stream's duplicate window in these tests: a
// resend within it of an ID JetStream still remembers is dropped as a
// duplicate, whatever became of the message; short, so the tests see
// the resend land once it has passed (posedge-hq's duplicate_window,
// default 2m, plays this part in production).
const confirmWindow = 3 * time.Second

// hqSide is NATS with JetStream and posedge-hq's receiver over SQLite,
// which the test starts and stops.
type hqSide struct {
	t    *testing.T
	nats *testenv.NATS
	cfg  hq.Config
	log  *slog.Logger
	stop func()
	st   hqdb.Store // while up
	// opened, when set, runs once posedge-hq's database is open and
	// before its receiver starts reading the stream.
	opened func()
}

func newHQSide(t *testing.T) *hqSide {
	t.Helper()
	n := testenv.StartNATS(t)
	return newHQSideOn(t, n, n.URL())
}

// newHQSideOn is posedge-hq on a NATS server of the test's, connecting
// with url (its own user).
func newHQSideOn(t *testing.T, n *testenv.NATS, url string) *hqSide {
	t.Helper()
	h := &hqSide{t: t, nats: n,
		log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))}
	h.cfg = hq.DefaultConfig()
	h.cfg.NATSURL = url
	h.cfg.Database = "sqlite://" + filepath.Join(t.TempDir(), "hq.db")
	h.cfg.DuplicateWindow = confirmWindow
	t.Cleanup(h.down)
	return h
}

// up starts posedge-hq (it creates the stream when missing).
func (h *hqSide) up() {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := hq.OpenStore(ctx, h.cfg.Database, hqdb.StoreOptions{Logger: h.log})
	if err != nil {
		h.t.Fatal(err)
	}
	if h.opened != nil {
		h.opened()
	}
	recv := hq.NewReceiver(h.cfg, st, hq.NewMetrics(st, "test", h.log), h.log, "")
	done := make(chan error, 1)
	go func() { done <- recv.Run(ctx) }()
	h.st = st
	h.stop = func() { cancel(); <-done; st.Close() }
	testenv.WaitFor(h.t, time.Minute, "posedge-hq ready", func() bool { return recv.Ready() == nil })
}

// down stops posedge-hq, if it runs.
func (h *hqSide) down() {
	if h.stop != nil {
		h.stop()
		h.stop = nil
	}
}

// streamConfig is the stream as posedge-hq creates it.
func (h *hqSide) streamConfig() jetstream.StreamConfig { return h.cfg.StreamConfig() }

// js is the test's own JetStream client: the operator's, or the fault's.
func (h *hqSide) js() jetstream.JetStream {
	h.t.Helper()
	nc, err := nats.Connect(h.cfg.NATSURL)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		h.t.Fatal(err)
	}
	return js
}

// rows are the store's transactions HQ's database holds, flow → body.
func (h *hqSide) rows(store string) (map[string]string, int) {
	h.t.Helper()
	u, err := hq.ParseDatabaseURL(h.cfg.Database)
	if err != nil {
		h.t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+u.Path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		h.t.Fatal(err)
	}
	defer db.Close()
	out := map[string]string{}
	rs, err := db.Query(`SELECT flow_no, body FROM transactions WHERE store_id = ?`, store)
	if err != nil {
		return out, 0 // not created yet
	}
	defer rs.Close()
	for rs.Next() {
		var f, b string
		if err := rs.Scan(&f, &b); err != nil {
			h.t.Fatal(err)
		}
		out[f] = b
	}
	var conflicts int
	_ = db.QueryRow(`SELECT COUNT(*) FROM conflicts WHERE store_id = ?`, store).Scan(&conflicts)
	return out, conflicts
}

// storeSide is a store's journal and its replay to HQ, delivery
// confirmed after ConfirmAfter.
type storeSide struct {
	id  string
	j   *journal.Journal
	r   *replay.Replayer
	reg *prometheus.Registry
}

func newStoreSide(t *testing.T, id, url string, edit func(*replay.Config)) *storeSide {
	t.Helper()
	ctx := context.Background()
	j, err := journal.Open(ctx, filepath.Join(t.TempDir(), "journal.db"), journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	cfg := replay.Config{StoreID: id, NATSURL: url, BatchSize: 50, Idle: 50 * time.Millisecond,
		MaxBackoff: time.Second, Version: "test", Location: time.UTC, ConfirmAfter: time.Second}
	if edit != nil {
		edit(&cfg)
	}
	reg := prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	r, err := replay.New(cfg, j, nil, log, reg)
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &storeSide{id: id, j: j, r: r, reg: reg}
}

// sell journals sales from..to as the edge does (bodies as the tills
// got them) and returns their flow numbers.
func (s *storeSide) sell(t *testing.T, from, to int) []string {
	t.Helper()
	var flows []string
	at := time.Now().UTC().Add(-time.Hour)
	for n := from; n <= to; n++ {
		tx := outageSale(s.id, n, 2, at.Add(time.Duration(n)*time.Millisecond))
		if err := s.j.Append(context.Background(), tx); err != nil {
			t.Fatal(err)
		}
		flows = append(flows, tx.FlowNo)
	}
	return flows
}

func (s *storeSide) stats(t *testing.T) journal.Stats {
	t.Helper()
	st, err := s.j.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (s *storeSide) counter(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return value(mf.GetMetric()[0])
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func value(m *dto.Metric) float64 {
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

// delivered reports whether HQ holds exactly the journal's rows flows,
// body for body, and nothing else of the store, without a conflict.
func delivered(t *testing.T, h *hqSide, s *storeSide, flows []string) (bool, string) {
	t.Helper()
	got, conflicts := h.rows(s.id)
	if conflicts != 0 {
		t.Fatalf("%d conflicts at HQ", conflicts)
	}
	missing := 0
	for _, f := range flows {
		row, err := s.j.ByFlow(context.Background(), f)
		if err != nil || row == nil {
			t.Fatalf("journal row %s: %v", f, err)
		}
		b, ok := got[f]
		if !ok {
			missing++
			continue
		}
		if b != string(row.Body) {
			t.Fatalf("HQ stores %s as %s, the journal %s", f, b, row.Body)
		}
	}
	if len(got) > len(flows)-missing {
		t.Fatalf("HQ holds %d rows of %s, %d of them journaled", len(got), s.id, len(flows)-missing)
	}
	return missing == 0, fmt.Sprintf("HQ holds %d of %d", len(flows)-missing, len(flows))
}

// losses are the ways a JetStream stream loses messages it acknowledged.
func losses() []struct {
	name string
	lose func(t *testing.T, h *hqSide, js jetstream.JetStream) int
} {
	return []struct {
		name string
		lose func(t *testing.T, h *hqSide, js jetstream.JetStream) int
	}{
		{"DeleteMsg", func(t *testing.T, h *hqSide, js jetstream.JetStream) int {
			ctx := context.Background()
			s, err := js.Stream(ctx, h.cfg.Stream)
			if err != nil {
				t.Fatal(err)
			}
			info, err := s.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
				m, err := s.GetMsg(ctx, seq)
				if err != nil || strings.Count(m.Subject, ".") != 2 || seq%3 == 0 {
					continue // keep heartbeats and every third sale
				}
				if err := s.DeleteMsg(ctx, seq); err != nil {
					t.Fatal(err)
				}
				n++
			}
			return n
		}},
		{"purge", func(t *testing.T, h *hqSide, js jetstream.JetStream) int {
			ctx := context.Background()
			s, err := js.Stream(ctx, h.cfg.Stream)
			if err != nil {
				t.Fatal(err)
			}
			info, _ := s.Info(ctx)
			if err := s.Purge(ctx); err != nil {
				t.Fatal(err)
			}
			return int(info.State.Msgs)
		}},
		{"stream deleted and made again", func(t *testing.T, h *hqSide, js jetstream.JetStream) int {
			ctx := context.Background()
			s, err := js.Stream(ctx, h.cfg.Stream)
			if err != nil {
				t.Fatal(err)
			}
			info, _ := s.Info(ctx)
			if err := js.DeleteStream(ctx, h.cfg.Stream); err != nil {
				t.Fatal(err)
			}
			if _, err := js.CreateStream(ctx, h.streamConfig()); err != nil {
				t.Fatal(err)
			}
			return int(info.State.Msgs)
		}},
	}
}

// TestJetStreamLosingAckedMessagesIsRepaired: JetStream acknowledges a
// store's sales and then loses them (DeleteMsg, a purge, the stream
// deleted and made again) before posedge-hq stored them — posedge-hq
// down meanwhile, or running with its consumer paused (it answers the
// have query but has not read the messages yet). The store asks HQ what
// it holds, publishes again what HQ lacks, and every journaled sale ends
// at HQ once, body for body; the journal's unconfirmed count is seen
// above zero and back at zero; nothing is pruned before.
func TestJetStreamLosingAckedMessagesIsRepaired(t *testing.T) {
	for _, loss := range losses() {
		for _, hqRuns := range []bool{false, true} {
			name := loss.name + "/posedge-hq down"
			if hqRuns {
				name = loss.name + "/posedge-hq running"
			}
			t.Run(name, func(t *testing.T) {
				ctx := context.Background()
				h := newHQSide(t)
				js := h.js()
				if hqRuns {
					h.up()
					// posedge-hq answers, but reads nothing until resumed.
					if _, err := js.PauseConsumer(ctx, h.cfg.Stream, hq.ConsumerName, time.Now().Add(time.Hour)); err != nil {
						t.Fatal(err)
					}
				} else if _, err := js.CreateStream(ctx, h.streamConfig()); err != nil { // made by posedge-hq before it went down
					t.Fatal(err)
				}
				s := newStoreSide(t, "SLOSS", h.nats.URL(), nil)
				flows := s.sell(t, 1, 40)
				testenv.WaitFor(t, time.Minute, "JetStream to acknowledge every sale", func() bool { return s.stats(t).Backlog == 0 })
				if st := s.stats(t); st.Unconfirmed == 0 {
					t.Fatalf("acked and not stored at HQ, yet unconfirmed %d: %+v", st.Unconfirmed, st)
				}
				lost := loss.lose(t, h, js)
				t.Logf("JetStream lost %d acknowledged messages", lost)
				if hqRuns {
					if _, err := js.ResumeConsumer(ctx, h.cfg.Stream, hq.ConsumerName); err != nil &&
						!strings.Contains(err.Error(), "not found") { // the stream was made again: a fresh consumer
						t.Fatal(err)
					}
				} else {
					time.Sleep(2 * time.Second) // HQ down for a while: rows stay unconfirmed, nothing is resent
					if st := s.stats(t); st.Unconfirmed != 40 || s.counter(t, "posedge_hq_resent_total") != 0 {
						t.Fatalf("while posedge-hq is down: unconfirmed %d, resent %v: want 40, 0 (no resend without HQ's answer)",
							st.Unconfirmed, s.counter(t, "posedge_hq_resent_total"))
					}
					if n, err := s.j.Prune(ctx, time.Now().Add(time.Hour)); err != nil || n != 0 {
						t.Fatalf("pruned %d rows HQ never confirmed (%v)", n, err)
					}
					h.up()
				}
				start := time.Now()
				testenv.WaitFor(t, time.Minute, "HQ to hold every journaled sale, confirmed", func() bool {
					ok, _ := delivered(t, h, s, flows)
					// The status follows once the confirm round ends (see
					// TestClusterLossesAreRepaired).
					return ok && s.stats(t).Unconfirmed == 0 && s.stats(t).Backlog == 0 && s.r.Status().Unconfirmed == 0
				})
				t.Logf("repaired %v after the loss; resent %v rows, confirmed %v", time.Since(start).Round(time.Millisecond),
					s.counter(t, "posedge_hq_resent_total"), s.counter(t, "posedge_hq_confirmed_total"))
				if lost > 0 && s.counter(t, "posedge_hq_resent_total") == 0 && !hqRuns {
					t.Errorf("%d messages lost, none resent", lost)
				}
				if got := s.counter(t, "posedge_hq_confirmed_total"); got != 40 {
					t.Errorf("posedge_hq_confirmed_total %v, want 40 (each row once)", got)
				}
			})
		}
	}
}

// TestNoResendStormAfterALongOutage: posedge-hq is down (the stream
// intact) while a store sells a backlog, its confirmation loop asking
// every third of confirm_after without an answer. posedge-hq comes back
// but works through the stream slowly (its database's write lock held
// by another process: it answers the have query, yet stores nothing for
// a few seconds, so many rounds ask about rows it has not read). It
// answers "pending" for rows still in the stream above its consumer's
// ack floor: the store resends none of them, each is stored once and
// confirmed once, and the stream holds each message once.
func TestNoResendStormAfterALongOutage(t *testing.T) {
	const sales = 300
	ctx := context.Background()
	h := newHQSide(t)
	js := h.js()
	if _, err := js.CreateStream(ctx, h.streamConfig()); err != nil { // made by posedge-hq before it went down
		t.Fatal(err)
	}
	s := newStoreSide(t, "SSTORM", h.nats.URL(), nil)
	flows := s.sell(t, 1, sales)
	testenv.WaitFor(t, time.Minute, "JetStream to acknowledge the backlog", func() bool { return s.stats(t).Backlog == 0 })
	time.Sleep(2 * time.Second) // the outage: rounds go unanswered
	if got := s.counter(t, "posedge_hq_resent_total"); got != 0 {
		t.Fatalf("resent %v rows while posedge-hq was down", got)
	}

	// posedge-hq back, its database busy: it answers, it stores nothing.
	u, err := hq.ParseDatabaseURL(h.cfg.Database)
	if err != nil {
		t.Fatal(err)
	}
	var release func()
	h.opened = func() {
		db, err := sql.Open("sqlite", "file:"+u.Path)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
			t.Fatal(err)
		}
		release = func() {
			if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
				t.Error(err)
			}
			conn.Close()
			db.Close()
		}
	}
	h.up()
	answered := s.counter(t, "posedge_hq_confirmed_total")
	time.Sleep(4 * time.Second) // a dozen rounds at confirm_after 1 s, within HQ's 10 s busy timeout
	resentMeanwhile := s.counter(t, "posedge_hq_resent_total")
	st := s.stats(t)
	release()
	if got, _ := h.rows(s.id); len(got) != 0 || answered != 0 {
		t.Fatalf("HQ stored %d rows (confirmed %v) while its database was locked: the test proves nothing", len(got), answered)
	}
	if resentMeanwhile != 0 || st.Unconfirmed != sales {
		t.Errorf("while HQ had not read the stream yet: resent %v rows, unconfirmed %d; want 0 resent (no resend storm), %d unconfirmed",
			resentMeanwhile, st.Unconfirmed, sales)
	}

	testenv.WaitFor(t, time.Minute, "HQ to hold every sale, confirmed", func() bool {
		ok, _ := delivered(t, h, s, flows)
		return ok && s.stats(t).Unconfirmed == 0 && s.stats(t).Backlog == 0
	})
	if got := s.counter(t, "posedge_hq_resent_total"); got != 0 {
		t.Errorf("posedge_hq_resent_total %v, want 0", got)
	}
	if got := s.counter(t, "posedge_hq_confirmed_total"); got != sales {
		t.Errorf("posedge_hq_confirmed_total %v, want %d (each row once)", got, sales)
	}
	str, err := js.Stream(ctx, h.cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	subj := wire.TxnSubject(h.cfg.SubjectPrefix, s.id)
	info, err := str.Info(ctx, jetstream.WithSubjectFilter(subj))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.State.Subjects[subj]; got != sales {
		t.Errorf("the stream holds %d messages of the store's sales, want %d (none published twice)", got, sales)
	}
}

// TestForgedMessageIDDoesNotDropAnotherStoresSales: with a leaked
// credential of store S001 (the two-account template of
// docs/security.md), an attacker publishes on S001's own subject under
// the Nats-Msg-Ids of DEMO01's next flow numbers, and keeps doing so:
// each time JetStream's duplicate window (1 s here) lets an ID go, the
// attacker claims it again. DEMO01's sales get PubAcks with duplicate:
// true — JetStream dropped them as the forger's — and so would every
// resend on the stream. A duplicate ack is never taken as delivery: HQ
// lacks them, and DEMO01 hands them to HQ directly, outside the stream
// (posedge.hq.deliver.DEMO01); HQ stores each once, body for body.
func TestForgedMessageIDDoesNotDropAnotherStoresSales(t *testing.T) {
	const victim, attacker = "DEMO01", "S001"
	// The two-account template of docs/security.md as written there,
	// with these two stores; posedge-hq runs as its restricted user hq.
	n := testenv.StartNATSWithConfig(t, testenv.SecurityTemplateFor(t, "../../docs/security.md", victim, attacker))
	url := func(user, pw string) string { return fmt.Sprintf("nats://%s:%s@127.0.0.1:%d", user, pw, n.Port) }
	h := newHQSideOn(t, n, url("hq", testenv.DocumentedPassword))
	h.cfg.DuplicateWindow = time.Second
	h.up()

	// The attacker, first and for the whole test: DEMO01's next flow
	// numbers under S001's subject, claimed again as soon as JetStream
	// forgets them.
	anc, err := nats.Connect(url(strings.ToLower(attacker), testenv.DocumentedPassword), nats.CustomInboxPrefix(wire.InboxPrefix(attacker)))
	if err != nil {
		t.Fatal(err)
	}
	defer anc.Close()
	ajs, _ := jetstream.New(anc)
	const sales = 5
	at := time.Now().UTC().Add(-time.Hour)
	var claims atomic.Int64 // forgeries JetStream stored (not duplicates): claims of an ID
	forge := func(ctx context.Context) {
		for i := 1; i <= sales; i++ {
			forged := outageSale(attacker, 900+i, 1, at)
			m := nats.NewMsg(wire.TxnSubject(wire.DefaultSubjectPrefix, attacker))
			m.Header.Set(wire.HeaderMsgID, wire.MsgID(victim, outageSale(victim, i, 2, at).FlowNo))
			m.Header.Set(wire.HeaderSchema, wire.SchemaV1)
			m.Data = forged.Body
			ack, err := ajs.PublishMsg(ctx, m)
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("forged publish: %v", err)
				}
				return
			}
			if !ack.Duplicate {
				claims.Add(1)
			}
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	forge(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			forge(ctx)
			time.Sleep(10 * time.Millisecond)
		}
	})
	defer func() { stop(); wg.Wait() }()

	// The victim sells, with its own credential.
	s := newStoreSide(t, victim, url(strings.ToLower(victim), testenv.DocumentedPassword), nil)
	flows := s.sell(t, 1, sales)
	testenv.WaitFor(t, 30*time.Second, "HQ to hold DEMO01's sales, confirmed, while S001 keeps claiming their IDs", func() bool {
		ok, _ := delivered(t, h, s, flows)
		return ok && s.stats(t).Unconfirmed == 0 && s.stats(t).Backlog == 0
	})
	// The attacker must have claimed the IDs again after a window passed,
	// or the test showed only the first forgery.
	testenv.WaitFor(t, 10*time.Second, "S001 to claim each ID more than once", func() bool { return claims.Load() >= 2*sales })
	if got := s.counter(t, "posedge_hq_delivered_direct_total"); got < sales {
		t.Errorf("delivered directly %v rows, want %d: the forged IDs did not shadow the sales (the test proves nothing)", got, sales)
	}
	t.Logf("S001 claimed DEMO01's IDs %d times; DEMO01 resent %v rows on the stream, handed %v directly",
		claims.Load(), s.counter(t, "posedge_hq_resent_total"), s.counter(t, "posedge_hq_delivered_direct_total"))
}

// TestIncompleteDayRepairsItself: HQ's database is restored from a copy
// taken earlier, so rows HQ had confirmed are gone and the day's
// manifest shows it short (GET /v1/completeness). The store, asking HQ
// again about the confirmed rows of its last days (after the manifest,
// and every AuditEvery), resends what HQ lost; the day is complete again
// without a person, body for body.
func TestIncompleteDayRepairsItself(t *testing.T) {
	ctx := context.Background()
	h := newHQSide(t)
	h.up()
	s := newStoreSide(t, "SREST", h.nats.URL(), func(c *replay.Config) { c.AuditEvery = time.Hour })
	confirmed := func(flows []string) func() bool {
		return func() bool {
			ok, _ := delivered(t, h, s, flows)
			return ok && s.stats(t).Unconfirmed == 0 && s.stats(t).Backlog == 0
		}
	}
	first := s.sell(t, 1, 20)
	testenv.WaitFor(t, time.Minute, "the first 20 sales confirmed", confirmed(first))

	// The backup HQ will be restored from: the first 20 sales.
	u, err := hq.ParseDatabaseURL(h.cfg.Database)
	if err != nil {
		t.Fatal(err)
	}
	backup := filepath.Join(t.TempDir(), "hq-backup.db")
	db, err := sql.Open("sqlite", "file:"+u.Path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`VACUUM INTO ?`, backup); err != nil {
		t.Fatal(err)
	}
	db.Close()

	all := append(first, s.sell(t, 21, 40)...)
	testenv.WaitFor(t, time.Minute, "all 40 sales confirmed", confirmed(all))

	// HQ's database is restored from the backup.
	h.down()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		_ = os.Remove(u.Path + suffix)
	}
	b, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(u.Path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	h.up()
	if got, _ := h.rows(s.id); len(got) != 20 {
		t.Fatalf("HQ holds %d rows after the restore, want 20", len(got))
	}
	if st := s.stats(t); st.Unconfirmed != 0 || st.Backlog != 0 {
		t.Fatalf("the store thinks nothing is missing yet: %+v", st)
	}

	// The day ends: its manifest goes to HQ, which finds the day short…
	day := outageSale(s.id, 1, 2, time.Now().UTC().Add(-time.Hour)).BusinessDay
	if err := s.r.PublishManifest(ctx, day); err != nil {
		t.Fatal(err)
	}
	// …and, without a person, complete again.
	start := time.Now()
	testenv.WaitFor(t, time.Minute, "HQ to hold every sale again, the day complete", func() bool {
		if !confirmed(all)() {
			return false
		}
		rep, err := h.st.Completeness(ctx, time.Now())
		return err == nil && len(rep.Incomplete) == 0 && storedManifests(t, h.cfg.Database, s.id) > 0
	})
	t.Logf("repaired %v after the manifest; resent %v rows", time.Since(start).Round(time.Millisecond),
		s.counter(t, "posedge_hq_resent_total"))
	if got := s.counter(t, "posedge_hq_resent_total"); got < 20 {
		t.Errorf("resent %v rows, want the 20 HQ lost", got)
	}
}

// TestDeletedRowsOfAnOldDayAreResent: rows of a day three weeks back —
// older than the 7 days the hourly audit covers, inside the journal's
// retention — are deleted by hand from HQ's database after HQ confirmed
// them. The day's manifest shows it short (GET /v1/completeness); the
// store's daily audit of every day its journal holds (AuditAllEvery,
// short here) finds them gone and resends them, and the day is complete
// again without a person, body for body, each row stored once.
func TestDeletedRowsOfAnOldDayAreResent(t *testing.T) {
	ctx := context.Background()
	h := newHQSide(t)
	h.up()
	s := newStoreSide(t, "SDEL", h.nats.URL(), func(c *replay.Config) { c.AuditEvery, c.AuditAllEvery = time.Second, 2*time.Second })
	day := time.Now().UTC().AddDate(0, 0, -21).Truncate(24 * time.Hour).Add(10 * time.Hour)
	var flows []string
	for n := 1; n <= 30; n++ {
		tx := outageSale(s.id, n, 2, day.Add(time.Duration(n)*time.Minute))
		if err := s.j.Append(ctx, tx); err != nil {
			t.Fatal(err)
		}
		flows = append(flows, tx.FlowNo)
	}
	testenv.WaitFor(t, time.Minute, "the 30 sales confirmed", func() bool {
		ok, _ := delivered(t, h, s, flows)
		return ok && s.stats(t).Unconfirmed == 0 && s.stats(t).Backlog == 0
	})
	if err := s.r.PublishManifest(ctx, day.Format("20060102")); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, time.Minute, "the day's manifest at HQ, the day complete", func() bool {
		rep, err := h.st.Completeness(ctx, time.Now())
		return err == nil && len(rep.Incomplete) == 0 && storedManifests(t, h.cfg.Database, s.id) > 0
	})

	// HQ loses half the day: rows deleted by hand.
	u, err := hq.ParseDatabaseURL(h.cfg.Database)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+u.Path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec(`DELETE FROM transactions WHERE store_id = ? AND CAST(flow_no AS INTEGER) % 2 = 0`, s.id)
	db.Close()
	if n, _ := res.RowsAffected(); err != nil || n != 15 {
		t.Fatalf("deleted %d rows (%v), want 15", n, err)
	}
	if rep, err := h.st.Completeness(ctx, time.Now()); err != nil || len(rep.Incomplete) == 0 {
		t.Fatalf("HQ lost 15 rows, yet the day is complete: %+v %v", rep.Incomplete, err)
	}
	start := time.Now()
	testenv.WaitFor(t, 30*time.Second, "HQ to hold every sale again, the day complete", func() bool {
		ok, _ := delivered(t, h, s, flows)
		if !ok || s.stats(t).Unconfirmed != 0 || s.stats(t).Backlog != 0 {
			return false
		}
		rep, err := h.st.Completeness(ctx, time.Now())
		return err == nil && len(rep.Incomplete) == 0
	})
	t.Logf("repaired %v after the delete; resent %v rows", time.Since(start).Round(time.Millisecond),
		s.counter(t, "posedge_hq_resent_total"))
	// Resends inside the stream's duplicate window are dropped by
	// JetStream and retried until it has passed: more than 15.
	if got := s.counter(t, "posedge_hq_resent_total"); got < 15 {
		t.Errorf("resent %v rows, want at least the 15 HQ lost", got)
	}
}
