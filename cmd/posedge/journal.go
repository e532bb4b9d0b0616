package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/posedge/posedge/offline/journal"
)

// journalCommand is `posedge journal stats|export|verify|backup DEST`.
// It opens the journal itself, so it works while the daemon is down;
// backup is a consistent online copy while the daemon sells.
type journalCommand struct{}

func (c *journalCommand) Run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return &exitError{code: 2, err: fmt.Errorf("usage: posedge journal stats|export|verify|backup DEST --config FILE")}
	}
	sub := args[0]
	fs := flag.NewFlagSet("posedge journal "+sub, flag.ContinueOnError)
	path := fs.String("config", "", "config file (default "+defaultConfigHint()+")")
	if err := fs.Parse(args[1:]); err != nil {
		return &exitError{code: 2}
	}
	cfg, err := loadConfig(*path)
	if err != nil {
		return err
	}
	j, err := journal.Open(ctx, cfg.Journal.Path, journal.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	defer j.Close()
	switch sub {
	case "stats":
		st, err := j.Stats(ctx)
		if err != nil {
			return err
		}
		return printJSON(stdout, st)
	case "verify":
		if err := j.Verify(ctx); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: integrity ok\n", cfg.Journal.Path)
		return nil
	case "export":
		return j.Export(ctx, stdout)
	case "backup":
		if fs.NArg() != 1 {
			return &exitError{code: 2, err: fmt.Errorf("usage: posedge journal backup DEST --config FILE")}
		}
		if err := j.Backup(ctx, fs.Arg(0)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "journal copied to %s\n", fs.Arg(0))
		return nil
	}
	return &exitError{code: 2, err: fmt.Errorf("unknown journal command %q (stats, export, verify, backup)", sub)}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
