package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/posedge/posedge/sync/hq"
)

// catalogCommand is `posedge-hq catalog import FILE.csv`: a whole price
// list into the item master bucket.
type catalogCommand struct {
	stdout, stderr io.Writer
}

func (c *catalogCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "import" {
		return &usageError{"catalog: want \"catalog import FILE.csv\""}
	}
	fs := flag.NewFlagSet("catalog import", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", hq.DefaultConfigPath, "config file")
	if err := fs.Parse(args[1:]); err != nil {
		return &usageError{"catalog import: " + err.Error()}
	}
	if fs.NArg() != 1 {
		return &usageError{"catalog import: want exactly one FILE.csv"}
	}
	log, err := newLogger(c.stderr, "text", "warn")
	if err != nil {
		return err
	}
	cfg, err := hq.LoadConfig(*configPath)
	if errors.Is(err, hq.ErrNoConfig) {
		return fmt.Errorf("%w (write one or pass --config FILE)", err)
	}
	if err != nil {
		return fmt.Errorf("invalid config:\n%w", err)
	}
	s, err := hq.ImportCatalogFile(ctx, cfg, fs.Arg(0), c.stderr, log)
	if err != nil {
		return fmt.Errorf("catalog import: %w", err)
	}
	// An import that changed nothing wrote no revision: say so rather
	// than "last revision 0", which reads like an empty bucket.
	last := "no new revision"
	if s.Written > 0 {
		last = fmt.Sprintf("last revision %d", s.LastRevision)
	}
	fmt.Fprintf(c.stdout, "imported %s into %s: %d rows, %d written, %d unchanged, %s, in %s\n",
		fs.Arg(0), cfg.CatalogBucket, s.Rows, s.Written, s.Unchanged, last, s.Took.Round(1e6))
	return nil
}
