package main

import (
	"context"
	"flag"
	"io"

	"github.com/posedge/posedge/edge/daemon"
)

// runCommand is `posedge run`: the daemon in the foreground.
type runCommand struct{}

func (c *runCommand) Run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("posedge run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "config file (default "+defaultConfigHint()+")")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	cfg, err := loadConfig(*path)
	if err != nil {
		return err
	}
	return daemon.Run(ctx, cfg, version, newLogger(stderr, cfg))
}
