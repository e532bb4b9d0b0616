// Command posedge-sim simulates a store's terminals against a running
// posedge: each terminal scans items and posts sales through the terminal
// API, retrying with the same Idempotency-Key as a real till must, and a
// summary is printed at the end. A development and demo tool.
//
//	posedge-sim --keys T01=key1,T02=key2 --seed-items 20 --duration 20s
//
// A busier store (what `make bench` runs): scan bursts, payment tokens,
// refunds and an offline till uploading batches; it prints counts by
// status and latency percentiles per route.
//
//	posedge-sim --keys … --scans 5-10 --tokens 0.3 --refunds 0.1 --batch-every 2s
//
// A chain after an HQ outage (`posedge-sim chain -h`): many stores, their
// journals filled with a day each, replaying at once to HQ's NATS.
//
//	posedge-sim chain --nats-url nats://hq1:4222,nats://hq2:4222 --stores 1000 --txns 5000
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/posedge/posedge/internal/moneycheck"
)

var version = "dev"

func main() {
	// The first Ctrl-C stops starting sales and lets those in flight end;
	// a second one kills the process.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }()
	err := run(ctx, os.Args[1:], os.Stdout)
	interrupted := ctx.Err() != nil
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "posedge-sim:", err)
		os.Exit(1)
	case interrupted:
		os.Exit(130) // as a shell reports Ctrl-C, so scripts stop too
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "chain" {
		return runChain(ctx, args[1:], out)
	}
	if len(args) > 0 && args[0] == "check" {
		return runCheck(args[1:], out)
	}
	fs := flag.NewFlagSet("posedge-sim", flag.ContinueOnError)
	var c Config
	var keys, barcodes string
	fs.StringVar(&c.URL, "url", "http://127.0.0.1:8080", "posedge terminal API")
	fs.StringVar(&c.AdminURL, "admin", "http://127.0.0.1:8081", "posedge admin API (for --seed-items)")
	fs.StringVar(&c.AdminToken, "admin-token", "", "admin bearer token (needed only when the admin API is not on loopback)")
	fs.StringVar(&keys, "keys", "", "terminals as ID=KEY,ID=KEY (required)")
	fs.DurationVar(&c.Duration, "duration", 20*time.Second, "how long to start new sales")
	fs.IntVar(&c.SeedItems, "seed-items", 0, "PUT this many demo items through the admin API first")
	fs.StringVar(&barcodes, "barcodes", "", "barcodes to sell, comma-separated (default: the demo items)")
	fs.Float64Var(&c.Rate, "rate", 1, "sales per second per terminal")
	fs.Float64Var(&c.ReplayFraction, "replay", 0.05, "fraction of sales replayed on purpose with the same key")
	scans := fs.String("scans", "1-4", "items scanned back to back and sold per sale, MIN-MAX (5-10: scan bursts)")
	fs.Float64Var(&c.TokenFraction, "tokens", 0, "fraction of sales keyed by a payment token from /v1/payment-tokens")
	fs.Float64Var(&c.RefundFraction, "refunds", 0, "fraction of sales refunded (one unit of a line) right after")
	fs.DurationVar(&c.BatchEvery, "batch-every", 0, "an offline till uploads a /v1/sales/batch this often (0: never)")
	fs.IntVar(&c.BatchSize, "batch-size", 20, "sales per batch upload (at most 100)")
	fs.IntVar(&c.ScarceItems, "scarce", 0, "PUT this many scarce items (--scarce-stock each) that a third of the sales race for")
	fs.Int64Var(&c.ScarceStock, "scarce-stock", 5, "initial stock of each scarce item")
	historyFile := fs.String("history", "", "write every request's intent and answer to this file (JSON), for `posedge-sim check FILE`")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// posedge answers "//v1/…" 404 (no redirects): join without doubling.
	c.URL, c.AdminURL = strings.TrimRight(c.URL, "/"), strings.TrimRight(c.AdminURL, "/")
	if *showVersion {
		fmt.Fprintln(out, "posedge-sim", version)
		return nil
	}
	var err error
	if c.Terminals, err = parseKeys(keys); err != nil {
		return err
	}
	if barcodes != "" {
		c.Barcodes = strings.Split(barcodes, ",")
	}
	if c.Rate <= 0 || c.Duration <= 0 || c.ReplayFraction < 0 || c.ReplayFraction > 1 {
		return errors.New("--rate and --duration must be > 0, --replay in [0, 1]")
	}
	if _, err := fmt.Sscanf(*scans, "%d-%d", &c.MinScans, &c.MaxScans); err != nil || c.MinScans < 1 || c.MaxScans < c.MinScans {
		return fmt.Errorf("--scans %q: want MIN-MAX with 1 <= MIN <= MAX", *scans)
	}
	if c.TokenFraction < 0 || c.TokenFraction > 1 || c.RefundFraction < 0 || c.RefundFraction > 1 {
		return errors.New("--tokens and --refunds must be in [0, 1]")
	}
	if c.BatchSize < 1 || c.BatchSize > 100 || c.BatchEvery < 0 {
		return errors.New("--batch-size must be in [1, 100], --batch-every >= 0")
	}
	if c.ScarceItems < 0 || c.ScarceItems > 0 && c.ScarceStock < 1 {
		return errors.New("--scarce must be >= 0, --scarce-stock >= 1")
	}
	c.UserAgent = "posedge-sim/" + version
	if *historyFile != "" {
		c.History = &moneycheck.History{}
	}
	sum, err := Run(ctx, c, out)
	if err != nil {
		return err
	}
	if c.History != nil {
		if err := writeHistory(*historyFile, c.History.Ops()); err != nil {
			return err
		}
		fmt.Fprintf(out, "posedge-sim: history of %d requests written to %s; judge it with: posedge-sim check%s %s\n",
			len(c.History.Ops()), *historyFile, stockFlag(SeededStock(c)), *historyFile)
	}
	sum.Print(out)
	if sum.ReplayMismatch > 0 {
		return fmt.Errorf("%d replays answered a different sale than the original", sum.ReplayMismatch)
	}
	if sum.Sales == 0 {
		return errors.New("no sale succeeded")
	}
	return nil
}

// parseKeys reads "T01=key1,T02=key2".
func parseKeys(s string) ([]Terminal, error) {
	if s == "" {
		return nil, errors.New("--keys is required (e.g. --keys T01=key1,T02=key2)")
	}
	var ts []Terminal
	for _, kv := range strings.Split(s, ",") {
		id, key, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || id == "" || key == "" {
			return nil, fmt.Errorf("--keys: %q is not ID=KEY", kv)
		}
		ts = append(ts, Terminal{ID: id, Key: key})
	}
	return ts, nil
}
