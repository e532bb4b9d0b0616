package replay_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/wire"
)

// TestStoreOverItsStreamCapIsRefusedAlone: HQ's stream holds at most 10
// messages per subject (stream_max_msgs_per_subject, discard new per
// subject) for 5 s (stream_max_age). A store selling 25 is refused past
// its cap — its rows stay unacknowledged in the journal, the refusal is
// counted and said in its status — while another store still publishes
// and is stored. As MaxAge frees the first store's space, its refused
// rows are sent again and every one ends at HQ once, body for body.
func TestStoreOverItsStreamCapIsRefusedAlone(t *testing.T) {
	h := newHQSide(t)
	h.cfg.StreamMaxMsgsPerSubject = 10
	h.cfg.StreamMaxAge = 5 * time.Second
	h.up()
	full := newStoreSide(t, "SFULL", h.nats.URL(), nil)
	flows := full.sell(t, 1, 25)
	testenv.WaitFor(t, 30*time.Second, "HQ's stream to refuse SFULL past its cap", func() bool {
		return refusals(t, full) > 0
	})
	if st := full.stats(t); st.Backlog == 0 {
		t.Fatalf("refused rows marked delivered: %+v", st)
	}
	if e := full.r.Status().LastError; !strings.Contains(e, "maximum messages per subject exceeded") || !strings.Contains(e, "stream is full") {
		t.Errorf("status last_error %q does not say the stream is full", e)
	}

	// Another store, meanwhile, is not pushed out nor refused.
	other := newStoreSide(t, "SOTHER", h.nats.URL(), nil)
	otherFlows := other.sell(t, 1, 5)
	testenv.WaitFor(t, 30*time.Second, "HQ to hold SOTHER's sales while SFULL is over its cap", func() bool {
		ok, _ := delivered(t, h, other, otherFlows)
		return ok
	})
	if got, _ := h.rows(full.id); len(got) >= len(flows) {
		t.Fatalf("HQ holds %d of SFULL's %d rows before its space was freed: the cap did not hold", len(got), len(flows))
	}
	if v := refusals(t, other); v != 0 {
		t.Errorf("SOTHER refused %v times: one store's cap reached another", v)
	}

	start := time.Now()
	testenv.WaitFor(t, 2*time.Minute, "every SFULL sale at HQ once, confirmed", func() bool {
		ok, _ := delivered(t, h, full, flows)
		return ok && full.stats(t).Unconfirmed == 0 && full.stats(t).Backlog == 0
	})
	t.Logf("SFULL drained %v after SOTHER; refused %v publishes", time.Since(start).Round(time.Millisecond),
		refusals(t, full))
}

// TestMessageAgedOutBeforeHQReadIsResent: posedge-hq is down while a
// store's sales are acknowledged; stream_max_age (4 s here) removes them
// from the stream before posedge-hq read them. posedge-hq comes back,
// the store's confirmation finds HQ lacks them, publishes them again
// from its journal, and each is stored once.
func TestMessageAgedOutBeforeHQReadIsResent(t *testing.T) {
	ctx := context.Background()
	h := newHQSide(t)
	h.cfg.StreamMaxAge = 4 * time.Second
	js := h.js()
	if _, err := js.CreateStream(ctx, h.streamConfig()); err != nil { // made by posedge-hq before it went down
		t.Fatal(err)
	}
	s := newStoreSide(t, "SAGED", h.nats.URL(), nil)
	flows := s.sell(t, 1, 20)
	testenv.WaitFor(t, time.Minute, "JetStream to acknowledge every sale", func() bool { return s.stats(t).Backlog == 0 })
	testenv.WaitFor(t, 30*time.Second, "MaxAge to remove the unread sales", func() bool {
		st, err := js.Stream(ctx, h.cfg.Stream)
		if err != nil {
			t.Fatal(err)
		}
		_, err = st.GetLastMsgForSubject(ctx, wire.TxnSubject(h.cfg.SubjectPrefix, s.id))
		return err != nil && strings.Contains(err.Error(), jetstream.ErrMsgNotFound.Error())
	})
	if st := s.stats(t); st.Unconfirmed != 20 {
		t.Fatalf("unconfirmed %d while HQ is down, want 20", st.Unconfirmed)
	}
	h.up()
	testenv.WaitFor(t, time.Minute, "HQ to hold every journaled sale, confirmed", func() bool {
		ok, _ := delivered(t, h, s, flows)
		return ok && s.stats(t).Unconfirmed == 0 && s.stats(t).Backlog == 0
	})
	if got := s.counter(t, "posedge_hq_resent_total"); got < 20 {
		t.Errorf("resent %v rows, want the 20 MaxAge removed", got)
	}
	if got := s.counter(t, "posedge_hq_confirmed_total"); got != 20 {
		t.Errorf("posedge_hq_confirmed_total %v, want 20 (each row once)", got)
	}
}

// TestExistingStreamGetsItsLimits: a stream made by an older posedge-hq,
// without limits, is given the configured ones (and discard new per
// subject) in place when posedge-hq starts; its messages stay.
func TestExistingStreamGetsItsLimits(t *testing.T) {
	ctx := context.Background()
	h := newHQSide(t)
	js := h.js()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: h.cfg.Stream, Subjects: []string{h.cfg.SubjectPrefix + ".>"},
		Storage: jetstream.FileStorage, Duplicates: h.cfg.DuplicateWindow}); err != nil {
		t.Fatal(err)
	}
	s := newStoreSide(t, "SOLD", h.nats.URL(), nil)
	flows := s.sell(t, 1, 5)
	testenv.WaitFor(t, time.Minute, "JetStream to acknowledge every sale", func() bool { return s.stats(t).Backlog == 0 })
	h.up()
	st, err := js.Stream(ctx, h.cfg.Stream)
	if err != nil {
		t.Fatal(err)
	}
	got, want := st.CachedInfo().Config, h.cfg.StreamConfig()
	if got.MaxAge != want.MaxAge || got.MaxBytes != want.MaxBytes || got.MaxMsgsPerSubject != want.MaxMsgsPerSubject ||
		got.Discard != jetstream.DiscardNew || !got.DiscardNewPerSubject {
		t.Fatalf("existing stream after start: max_age %v max_bytes %d max_msgs_per_subject %d discard %v per subject %v; want %v %d %d new true",
			got.MaxAge, got.MaxBytes, got.MaxMsgsPerSubject, got.Discard, got.DiscardNewPerSubject,
			want.MaxAge, want.MaxBytes, want.MaxMsgsPerSubject)
	}
	testenv.WaitFor(t, time.Minute, "HQ to hold the sales sent before the update", func() bool {
		ok, _ := delivered(t, h, s, flows)
		return ok && s.stats(t).Unconfirmed == 0
	})
}

// refusals is the store's posedge_replay_publish_errors_total{kind="stream_full"}.
func refusals(t *testing.T, s *storeSide) float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "posedge_replay_publish_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "kind" && lp.GetValue() == "stream_full" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestFullStreamRowsGoToHQDirectly: another store's credential floods
// HQ's stream up to stream_max_bytes (1 MiB here) with its own junk, so
// JetStream refuses every store's publish ("maximum bytes exceeded")
// until the messages age out — 14 days by default. The victim's sales
// are handed to posedge-hq directly (posedge.hq.deliver.<store>, outside
// the stream) and stored once, body for body, and confirmed, while the
// stream stays full. Before the fallback it timed out: the rows waited
// in the journal for space.
func TestFullStreamRowsGoToHQDirectly(t *testing.T) {
	ctx := context.Background()
	h := newHQSide(t)
	h.cfg.StreamMaxBytes = 1 << 20
	h.up()
	js := h.js()
	flood := wire.TxnSubject(h.cfg.SubjectPrefix, "SFLOOD")
	// Ever smaller messages until not even one byte fits.
	for _, size := range []int{64 << 10, 4 << 10, 256, 16, 1} {
		full := false
		for i := 0; i < 1000 && !full; i++ {
			_, err := js.Publish(ctx, flood, make([]byte, size))
			switch {
			case err == nil:
			case strings.Contains(err.Error(), "maximum bytes exceeded"):
				full = true
			default:
				t.Fatalf("flood publish of %d bytes: %v", size, err)
			}
		}
		if !full {
			t.Fatalf("the stream never filled with %d-byte messages: stream_max_bytes not applied?", size)
		}
	}

	victim := newStoreSide(t, "SVICTIM", h.nats.URL(), nil)
	flows := victim.sell(t, 1, 20)
	testenv.WaitFor(t, 30*time.Second, "HQ to hold every SVICTIM sale, confirmed, the stream full", func() bool {
		ok, _ := delivered(t, h, victim, flows)
		return ok && victim.stats(t).Unconfirmed == 0 && victim.stats(t).Backlog == 0
	})
	if refusals(t, victim) == 0 {
		t.Error("no publish of SVICTIM was refused: the stream was not full when it sold, the test shows nothing")
	}
	if got := victim.counter(t, "posedge_hq_delivered_direct_total"); got < float64(len(flows)) {
		t.Errorf("posedge_hq_delivered_direct_total %v, want at least %d", got, len(flows))
	}
	if _, err := js.Publish(ctx, flood, []byte("x")); err == nil || !strings.Contains(err.Error(), "maximum bytes exceeded") {
		t.Errorf("the stream took a message at the end (%v): it was not full throughout", err)
	}
}
