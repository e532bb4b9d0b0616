package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/posedge/posedge/sync/chainsim"
)

// runChain is `posedge-sim chain`: a chain's stores, their journals
// filled with a day of sales and refunds, replaying at once to HQ's
// stream as after an HQ outage.
//
//	posedge-sim chain --nats-url nats://hq1:4222,nats://hq2:4222 --stores 1000 --txns 5000
func runChain(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("posedge-sim chain", flag.ContinueOnError)
	fs.SetOutput(out)
	var o chainsim.RunOptions
	var day string
	fs.StringVar(&o.Replay.NATSURL, "nats-url", "nats://127.0.0.1:4222", "HQ's NATS: one server or a comma-separated list (a cluster)")
	fs.IntVar(&o.Stores, "stores", 10, "stores in the chain")
	fs.IntVar(&o.Txns, "txns", 500, "transactions per store (the day's journal)")
	fs.IntVar(&o.RefundEvery, "refund-every", 20, "every n-th transaction refunds the sale before it (0: none)")
	fs.IntVar(&o.Terminals, "terminals", 4, "tills per store")
	fs.StringVar(&day, "day", "", "business day YYYY-MM-DD (default yesterday, UTC)")
	fs.StringVar(&o.Dir, "dir", "", "keep the journals here (default: a temporary directory, removed at the end)")
	fs.DurationVar(&o.Replay.StartJitter, "jitter", 2*time.Second, "each store starts replaying after a random delay up to this")
	fs.DurationVar(&o.Replay.SyncEvery, "sync-every", 0, "per-store sync policy: store i sends at most one batch per this × (1 + i mod 3) (0: unthrottled)")
	fs.IntVar(&o.Replay.BatchSize, "batch-size", 500, "rows per replay batch")
	fs.DurationVar(&o.ProgressEvery, "progress-every", 5*time.Second, "print the chain's backlog this often")
	fs.DurationVar(&o.Timeout, "timeout", time.Hour, "give up the replay after this")
	verbose := fs.Bool("v", false, "log the replayers' warnings to stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("chain: unexpected argument %q", fs.Arg(0))
	}
	if o.Stores < 1 || o.Txns < 1 || o.Terminals < 1 || o.RefundEvery < 0 || o.Replay.BatchSize < 1 {
		return errors.New("chain: --stores, --txns, --terminals and --batch-size must be >= 1, --refund-every >= 0")
	}
	if o.RefundEvery == 0 {
		o.RefundEvery = -1 // chainsim: < 0 is none
	}
	if day != "" {
		d, err := time.Parse(time.DateOnly, day)
		if err != nil {
			return fmt.Errorf("chain: --day %q: want YYYY-MM-DD", day)
		}
		o.Day = d
	}
	level := slog.LevelError
	if *verbose {
		level = slog.LevelWarn
	}
	o.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	sum, err := chainsim.Run(ctx, o, out)
	if err != nil {
		return err
	}
	sum.Print(out)
	if sum.Quarantined > 0 {
		return fmt.Errorf("chain: %d transactions quarantined by the stores", sum.Quarantined)
	}
	return nil
}
