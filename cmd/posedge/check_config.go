package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/posedge/posedge/edge/config"
)

// checkConfigCommand is `posedge check-config`: validate, print, exit 0/1.
type checkConfigCommand struct{}

func (c *checkConfigCommand) Run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("posedge check-config", flag.ContinueOnError)
	cf := addConfigFlag(fs)
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	p := cf.Path()
	cfg, err := config.Load(p)
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	fmt.Fprintf(stdout, "%s: OK (store %s, %d terminals)\n", p, cfg.StoreID, len(cfg.Terminals))
	for _, w := range cfg.PlaintextWarnings() {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	return nil
}
