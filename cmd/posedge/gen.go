package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"

	"github.com/posedge/posedge/internal/secret"
)

// genCommand is `posedge gen-admin-token [--out FILE]` and `posedge
// gen-terminal-key ID`: a new random secret, shown once, with the config
// line to paste. Nothing is kept: a lost secret is replaced, not recovered.
type genCommand struct{ what string }

var terminalID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

func (c *genCommand) Run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("posedge "+c.what, flag.ContinueOnError)
	out := fs.String("out", "", "gen-admin-token: write the token to this new file (mode 0600) instead of printing it")
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	tok, err := secret.NewToken()
	if err != nil {
		return err
	}
	switch c.what {
	case "gen-admin-token":
		if fs.NArg() != 0 {
			return &exitError{code: 2, err: errors.New("gen-admin-token takes no arguments")}
		}
		path := "/etc/posedge/admin.token"
		if *out != "" {
			f, err := os.OpenFile(*out, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return fmt.Errorf("gen-admin-token: %w", err)
			}
			_, err = fmt.Fprintln(f, tok)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("gen-admin-token: write %s: %w", *out, err)
			}
			fmt.Fprintf(stdout, "wrote a new admin token to %s (mode 0600)\n\nin posedge.yaml:\n  admin:\n    token_file: %q\n", *out, *out)
			return nil
		}
		fmt.Fprintf(stdout, "%s\n\nStore it in a file only root and the posedge user can read, e.g.\n"+
			"  install -m 0640 -g posedge /dev/stdin %s   (paste, then Ctrl-D)\n"+
			"and in posedge.yaml:\n  admin:\n    token_file: %q\n"+
			"`posedge status` reads the file itself; other clients send \"Authorization: Bearer <token>\".\n", tok, path, path)
	case "gen-terminal-key":
		if fs.NArg() != 1 || !terminalID.MatchString(fs.Arg(0)) {
			return &exitError{code: 2, err: errors.New("usage: posedge gen-terminal-key ID (1-32 of [A-Za-z0-9_-], e.g. T07)")}
		}
		if *out != "" {
			return &exitError{code: 2, err: errors.New("gen-terminal-key prints the key for the till: --out is not for it")}
		}
		sum := sha256.Sum256([]byte(tok))
		fmt.Fprintf(stdout, "%s\n\nConfigure the till %s with this key (Authorization: Bearer <key>); it is shown once.\n"+
			"In posedge.yaml, under terminals:\n  - {id: %q, key_sha256: %q}\n", tok, fs.Arg(0), fs.Arg(0), hex.EncodeToString(sum[:]))
	}
	return nil
}
