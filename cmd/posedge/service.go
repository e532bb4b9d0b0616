package main

import (
	"context"
	"fmt"
	"io"
)

// serviceCommand registers and controls the system service.
type serviceCommand struct{ action string }

func (c *serviceCommand) Run(ctx context.Context, args []string, stdout io.Writer) error {
	return &exitError{code: 1, err: fmt.Errorf("posedge %s: service management is not built yet (issue 7); run `posedge run --config FILE` under your init system", c.action)}
}
