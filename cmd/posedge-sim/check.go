package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"

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

// runCheck is `posedge-sim check [--stock BARCODE=N,…] FILE`: the history
// a run wrote with --history, judged by internal/moneycheck from itself
// alone (every 2xx answer matches its intent, retries got the same
// answer, refunds never exceed their sale, flow numbers unique) and, for
// the items --stock names with their initial stock (a run with --scarce
// prints the flag), that no normal-mode sale took stock below zero and
// that every 409 insufficient_stock had a cause in the history. HQ and
// counters are not read (the e2e tests give the checker those).
func runCheck(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("posedge-sim check", flag.ContinueOnError)
	stock := fs.String("stock", "", "initial stock of the items to audit, BARCODE=N,BARCODE=N")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return errors.New("usage: posedge-sim check [--stock BARCODE=N,...] HISTORY-FILE")
	}
	path := fs.Arg(0)
	w := moneycheck.World{}
	if *stock != "" {
		w.InitialStock = map[string]int64{}
		for _, kv := range strings.Split(*stock, ",") {
			bc, n, ok := strings.Cut(kv, "=")
			v, err := strconv.ParseInt(n, 10, 64)
			if !ok || bc == "" || err != nil {
				return fmt.Errorf("--stock: %q is not BARCODE=N", kv)
			}
			w.InitialStock[bc] = v
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the history: %w", err)
	}
	var ops []moneycheck.Op
	if err := json.Unmarshal(b, &ops); err != nil {
		return fmt.Errorf("decoding the history %s: %w", path, err)
	}
	rep, err := moneycheck.Check(ops, w)
	fmt.Fprintln(out, rep)
	if err != nil {
		return fmt.Errorf("history %s: %w", path, err)
	}
	return nil
}

// stockFlag is the --stock flag of `posedge-sim check` for these initial
// stocks ("" when none).
func stockFlag(stock map[string]int64) string {
	if len(stock) == 0 {
		return ""
	}
	var kv []string
	for bc, n := range stock {
		kv = append(kv, fmt.Sprintf("%s=%d", bc, n))
	}
	sort.Strings(kv)
	return " --stock " + strings.Join(kv, ",")
}
