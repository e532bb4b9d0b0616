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
	path := fs.String("config", "", "config file (default "+defaultConfigHint()+")")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	return runDaemon(ctx, *path, stderr) // service_other.go, service_windows.go
}
