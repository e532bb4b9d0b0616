package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/posedge/posedge/sync/hq"
)

// checkConfigCommand is `posedge-hq check-config`: validate the config
// as `run` would, say what it found, exit 0 or 1 (the package's
// ExecStartPre and an engineer's edit check).
type checkConfigCommand struct {
	stdout io.Writer
}

func (c *checkConfigCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("check-config", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", hq.DefaultConfigPath, "config file")
	if err := fs.Parse(args); err != nil {
		return &usageError{"check-config: " + err.Error()}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("check-config: unexpected argument %q", fs.Arg(0))}
	}
	cfg, err := hq.LoadConfig(*configPath)
	if err != nil {
		return err // names the file and every problem, as posedge check-config
	}
	db, _ := hq.ParseDatabaseURL(cfg.Database)
	fmt.Fprintf(c.stdout, "%s: OK (stream %s, %s database, admin %s, silent after %s)\n",
		*configPath, cfg.Stream, db.Kind, cfg.AdminListen, cfg.SilentAfter)
	return nil
}
