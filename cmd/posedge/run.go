package main

import (
	"context"
	"flag"
	"io"
)

// runCommand is `posedge run`: the daemon in the foreground.
type runCommand struct{}

func (c *runCommand) Run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("posedge run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addConfigFlag(fs)
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	return runDaemon(ctx, cf.Path(), stderr) // service_other.go, service_windows.go
}
