package health

import (
	"context"
	"time"
)

// ProbeEvery is how often the prober asks Redis, the Sentinels and the
// journal when nothing asks it sooner: each probe is a round of network
// calls or a query, so not on every status read.
const ProbeEvery = 2 * time.Second

// Probes are what the prober asks. Redis returns what it saw (its
// SeenAt may be left zero); Journal returns the journal's answer.
type Probes struct {
	Redis   func(context.Context) Redis
	Journal func(context.Context) error
}

// Probe runs the probes once and reports what they said. A probe cut
// short by ctx reports nothing: its answer says nothing of Redis.
func (t *Tracker) Probe(ctx context.Context, p Probes) {
	if p.Redis != nil {
		r := p.Redis(ctx)
		if ctx.Err() != nil {
			return
		}
		t.ReportRedis(r)
	}
	if p.Journal != nil {
		err := p.Journal(ctx)
		if ctx.Err() == nil {
			t.ReportJournal(err)
		}
	}
}

// Watch probes every ProbeEvery, and at once when a reporter saw Redis
// fail (Reprobe), until ctx ends. Readers only read the facts: a status
// asked for while Redis hangs answers at once, with what was last seen
// and how long ago.
func (t *Tracker) Watch(ctx context.Context, p Probes) {
	tick := time.NewTicker(ProbeEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-t.reprobe:
		}
		t.Probe(ctx, p)
	}
}
