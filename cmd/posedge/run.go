package main

import (
	"context"
	"flag"
	"io"

	"github.com/posedge/posedge/internal/cpuprofile"
)

// runCommand is `posedge run`: the daemon in the foreground.
type runCommand struct{}

func (c *runCommand) Run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("posedge run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addConfigFlag(fs)
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (go tool pprof) of the run to this file, ended by SIGTERM")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	if *cpuProfile != "" {
		stop, err := cpuprofile.Start(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	return runDaemon(ctx, cf.Path(), stderr) // service_other.go, service_windows.go
}
