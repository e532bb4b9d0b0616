package chainsim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// RunOptions are one simulated chain replay, as `posedge-sim chain`
// takes them: the chain, how its stores replay, and how often progress
// is printed.
type RunOptions struct {
	Options
	Replay        ReplayOptions
	ProgressEvery time.Duration // default 5s
	// Timeout bounds the replay (not the build); default 1h.
	Timeout time.Duration
}

// Summary is what a chain replay did.
type Summary struct {
	Stores, Txns, Sales, Refunds int
	Manifests                    int
	Built, Replayed              time.Duration
	Quarantined                  int64
}

// RatePerSecond is the transactions acknowledged by the stream per
// second of replay.
func (s Summary) RatePerSecond() float64 {
	if s.Replayed <= 0 {
		return 0
	}
	return float64(s.Txns) / s.Replayed.Seconds()
}

// Print writes the summary as `key value` lines.
func (s Summary) Print(w io.Writer) {
	fmt.Fprintf(w, "stores %d\ntransactions %d\nsales %d\nrefunds %d\nmanifests %d\nquarantined %d\n",
		s.Stores, s.Txns, s.Sales, s.Refunds, s.Manifests, s.Quarantined)
	fmt.Fprintf(w, "built_s %.1f\nreplayed_s %.1f\ntxns_per_s %.0f\n", s.Built.Seconds(), s.Replayed.Seconds(), s.RatePerSecond())
}

// Run builds the chain's journals (in o.Dir, or a temporary directory
// removed afterwards), replays them all at once to the stream at
// o.Replay.NATSURL, printing the chain's backlog every ProgressEvery to
// progress, and, once every transaction is acknowledged by the stream,
// publishes every store's manifests. The stream must exist (posedge-hq
// creates it).
func Run(ctx context.Context, o RunOptions, progress io.Writer) (Summary, error) {
	if o.Replay.NATSURL == "" {
		return Summary{}, errors.New("chainsim: a NATS URL is required")
	}
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = 5 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Hour
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "posedge-chain-")
		if err != nil {
			return Summary{}, fmt.Errorf("chainsim: journal directory: %w", err)
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	start := time.Now()
	fmt.Fprintf(progress, "building %d journals of %d transactions in %s\n", max(o.Stores, 0), max(o.Txns, 0), o.Dir)
	c, err := Build(ctx, o.Options)
	if err != nil {
		return Summary{}, err
	}
	defer c.Close()
	sum := Summary{Stores: len(c.Stores), Txns: c.Txns(), Built: time.Since(start)}
	for _, s := range c.Stores {
		sum.Sales += s.Sales
		sum.Refunds += s.Refunds
	}
	fmt.Fprintf(progress, "built in %v; replaying to %s\n", sum.Built.Round(time.Millisecond), o.Replay.NATSURL)

	rctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	start = time.Now()
	stop, err := c.Replay(rctx, o.Replay)
	if err != nil {
		return sum, err
	}
	backlog, err := c.waitDrained(rctx, o.ProgressEvery, start, progress)
	if err == nil {
		sum.Replayed = time.Since(start)
		fmt.Fprintf(progress, "every transaction acknowledged after %v; publishing manifests\n", sum.Replayed.Round(time.Millisecond))
		if err = c.PublishManifests(rctx); err == nil {
			sum.Manifests, err = c.Manifests(rctx)
		}
	}
	if serr := stop(); serr != nil && err == nil {
		err = serr
	}
	if err != nil {
		return sum, fmt.Errorf("chainsim: replay (%d transactions not acknowledged): %w", backlog, err)
	}
	if sum.Quarantined, err = c.Quarantined(ctx); err != nil {
		return sum, err
	}
	return sum, nil
}

// waitDrained polls the chain's backlog until it is zero, printing it
// every `every`; it returns the last backlog seen.
func (c *Chain) waitDrained(ctx context.Context, every time.Duration, start time.Time, progress io.Writer) (int64, error) {
	poll := time.NewTicker(min(every, 250*time.Millisecond))
	defer poll.Stop()
	last := time.Now()
	total := int64(c.Txns())
	for {
		backlog, err := c.Backlog(ctx)
		if err != nil {
			return -1, err
		}
		if backlog == 0 {
			return 0, nil
		}
		if time.Since(last) >= every {
			last = time.Now()
			el := time.Since(start)
			fmt.Fprintf(progress, "%v: %d of %d acknowledged (%.0f/s), %d to go\n",
				el.Round(time.Second), total-backlog, total, float64(total-backlog)/el.Seconds(), backlog)
		}
		select {
		case <-ctx.Done():
			return backlog, ctx.Err()
		case <-poll.C:
		}
	}
}
