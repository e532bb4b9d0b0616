package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/posedge/posedge/internal/businessday"
	"github.com/posedge/posedge/offline/journal"
	"github.com/posedge/posedge/sync/wire"
)

// ErrNotConnected is returned by PublishManifest while HQ is unreachable;
// the replay publishes the manifest itself once HQ is back.
var ErrNotConnected = errors.New("not connected to HQ")

// controlTimeout bounds the publish of a heartbeat or a manifest.
const controlTimeout = 5 * time.Second

// firstHeartbeatRetry is the delay before the first heartbeat and
// between its retries; with controlTimeout it keeps the first heartbeat
// within 10 s of the start when HQ is reachable.
const firstHeartbeatRetry = 2 * time.Second

// background refreshes the backlog figures, sends heartbeats, and
// publishes a day's manifests when the business day changes, until ctx
// ends. Heartbeats and manifests go through JetStream (subjects below
// <prefix>.<store>., captured by the stream), so HQ's durable consumer
// sees them even when it was down when they were sent.
func (r *Replayer) background(ctx context.Context) {
	stats := time.NewTicker(statsEvery)
	defer stats.Stop()
	hb := time.NewTicker(r.cfg.HeartbeatEvery)
	defer hb.Stop()
	// The first heartbeat goes out within firstHeartbeatWithin of the
	// start (retried every firstHeartbeatRetry until HQ takes one), so
	// that HQ's fleet view lists a store seconds after it starts, not a
	// minute later.
	first := time.NewTimer(firstHeartbeatRetry)
	defer first.Stop()
	r.refreshStats(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-first.C:
			r.refreshStats(ctx)
			if err := r.heartbeat(ctx); err != nil && ctx.Err() == nil {
				r.log.Debug("first heartbeat not sent; retrying", "err", err)
				first.Reset(firstHeartbeatRetry)
			}
		case <-stats.C:
			r.refreshStats(ctx)
		case <-hb.C:
			r.refreshStats(ctx)
			if err := r.heartbeat(ctx); err != nil && ctx.Err() == nil {
				r.log.Debug("heartbeat not sent", "err", err)
			}
			r.endOfDay(ctx)
		}
	}
}

func (r *Replayer) refreshStats(ctx context.Context) {
	s, err := r.j.BacklogStats(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Warn("read backlog figures", "err", err)
		}
		return
	}
	r.m.backlog.Set(float64(s.Backlog))
	r.m.backlogBytes.Set(float64(s.BacklogBytes))
	age := 0.0
	if s.OldestUnsent != nil {
		age = max(time.Since(*s.OldestUnsent).Seconds(), 0)
	}
	r.m.oldestAge.Set(age)
	r.m.unconfirmed.Set(float64(s.Unconfirmed))
	r.mu.Lock()
	r.st.Backlog, r.st.BacklogBytes, r.st.OldestUnsent, r.st.Quarantined = s.Backlog, s.BacklogBytes, s.OldestUnsent, s.Quarantined
	r.st.Unconfirmed, r.st.OldestUnconfirmedAck = s.Unconfirmed, s.OldestUnconfirmedAck
	r.mu.Unlock()
}

func (r *Replayer) heartbeat(ctx context.Context) error {
	st := r.Status()
	now := time.Now().Add(r.cfg.TestClockSkew).UTC().Format(time.RFC3339Nano)
	hb := wire.Heartbeat{StoreID: r.cfg.StoreID, SentAt: now,
		Backlog: st.Backlog, Version: r.cfg.Version,
		HeartbeatFormat: wire.HeartbeatFormat2, StoreClock: now,
		// Rows JetStream acknowledged that HQ has not confirmed storing.
		Unconfirmed: st.Unconfirmed,
		// Whole days, rounded down: HQ then says a day past retention a
		// little early rather than promise a repair the store cannot do.
		JournalRetentionDays: min(int(r.cfg.JournalRetention/(24*time.Hour)), wire.MaxJournalRetentionDays)}
	if r.cfg.HeartbeatState != nil {
		hb.Mode, hb.StatusLevel = r.cfg.HeartbeatState()
	}
	if st.OldestUnsent != nil {
		hb.OldestUnsent = st.OldestUnsent.UTC().Format(time.RFC3339Nano)
	}
	return r.publishControl(ctx, wire.HeartbeatSubject(r.cfg.SubjectPrefix, r.cfg.StoreID), hb)
}

// endOfDay publishes the manifests of a business day that just ended,
// and retries those that could not be published before.
func (r *Replayer) endOfDay(ctx context.Context) {
	today := businessday.Of(time.Now(), r.cfg.Location)
	r.mu.Lock()
	if r.day != today {
		r.manifests[r.day] = true
		r.day = today
	}
	days := slices.Sorted(maps.Keys(r.manifests))
	r.mu.Unlock()
	for _, d := range days {
		if err := r.PublishManifest(ctx, d); err != nil {
			r.log.Info("day manifest not published yet; retrying with the next heartbeat", "day", d, "err", err)
			return
		}
	}
}

// PublishManifest publishes, for a business day (YYYYMMDD), one
// wire.Manifest per terminal with the figures of the journal. When HQ is
// unreachable it returns an error wrapping ErrNotConnected, and the
// replay publishes the day itself after HQ is back.
func (r *Replayer) PublishManifest(ctx context.Context, day string) error {
	ms, err := Manifests(ctx, r.j, r.cfg.StoreID, day)
	if err != nil {
		return err
	}
	subject := wire.ManifestSubject(r.cfg.SubjectPrefix, r.cfg.StoreID)
	for _, m := range ms {
		if err := r.publishControl(ctx, subject, m); err != nil {
			r.mu.Lock()
			r.manifests[day] = true
			r.mu.Unlock()
			return fmt.Errorf("manifest of %s, terminal %s: %w", day, m.TerminalID, err)
		}
	}
	r.mu.Lock()
	delete(r.manifests, day)
	r.mu.Unlock()
	r.auditNow.Store(true)
	r.log.Info("day manifest published", "day", day, "terminals", len(ms))
	return nil
}

// Manifests are the manifests of a business day (YYYYMMDD), one per
// terminal that sold or refunded that day, with the journal's figures
// and the current time as sent_at. A read-only journal will do.
func Manifests(ctx context.Context, j *journal.Journal, storeID, day string) ([]wire.Manifest, error) {
	if !businessday.Valid(day) {
		return nil, fmt.Errorf("manifest day %q: want YYYYMMDD", day)
	}
	totals, err := j.DayTotals(ctx, day)
	if err != nil {
		return nil, fmt.Errorf("manifest of %s: %w", day, err)
	}
	sentAt := time.Now().UTC().Format(time.RFC3339Nano)
	ms := make([]wire.Manifest, 0, len(totals))
	for _, t := range totals {
		ms = append(ms, wire.Manifest{StoreID: storeID, TerminalID: t.TerminalID, Date: day,
			Sales: t.Sales, SalesCents: t.SalesCents, Refunds: t.Refunds, RefundCents: t.RefundCents,
			FirstFlowNo: t.FirstFlowNo, LastFlowNo: t.LastFlowNo, SentAt: sentAt})
	}
	return ms, nil
}

// publishControl publishes a heartbeat or manifest and waits for its ack.
func (r *Replayer) publishControl(ctx context.Context, subject string, v any) error {
	l := r.nc.Load()
	if l == nil || !l.nc.IsConnected() {
		return ErrNotConnected
	}
	body, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", subject, err)
	}
	m := nats.NewMsg(subject)
	m.Data = body
	m.Header.Set(wire.HeaderSchema, wire.SchemaV1)
	pctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	if _, err := l.js.PublishMsg(pctx, m); err != nil {
		return fmt.Errorf("publish %s: %w", subject, err)
	}
	return nil
}
