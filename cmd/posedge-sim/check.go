package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/posedge/posedge/internal/moneycheck"
)

// writeHistory saves a run's history as JSON (moneycheck.Op, one array).
func writeHistory(path string, ops []moneycheck.Op) error {
	b, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("encoding the history: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("writing the history: %w", err)
	}
	return nil
}

// runCheck is `posedge-sim check FILE`: the history a run wrote with
// --history, judged by internal/moneycheck from itself alone (every 2xx
// answer matches its intent, retries got the same answer, refunds never
// exceed their sale, flow numbers unique); HQ, stock and counters are not
// read (the e2e tests give the checker those).
func runCheck(args []string, out io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: posedge-sim check HISTORY-FILE")
	}
	b, err := os.ReadFile(args[0])
	if err != nil {
		return fmt.Errorf("reading the history: %w", err)
	}
	var ops []moneycheck.Op
	if err := json.Unmarshal(b, &ops); err != nil {
		return fmt.Errorf("decoding the history %s: %w", args[0], err)
	}
	rep, err := moneycheck.Check(ops, moneycheck.World{})
	fmt.Fprintln(out, rep)
	if err != nil {
		return fmt.Errorf("history %s: %w", args[0], err)
	}
	return nil
}
