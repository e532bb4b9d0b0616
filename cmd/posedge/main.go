// Command posedge is the store-local edge daemon and its operator
// commands (contract §1). main only wires: flags, config, signals.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/posedge/posedge/edge/config"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// exitError carries a command's exit code (status uses Nagios codes).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

const usage = `posedge — the store's edge daemon

Usage:
  posedge run          --config FILE     foreground daemon (what the service runs; --cpuprofile FILE: a pprof CPU profile until SIGTERM)
  posedge install      --config FILE     register as a system service
  posedge uninstall [--force] | start | stop | restart | status-service
  posedge status       [--config FILE] [--json] [--timeout 3s]
  posedge check-config --config FILE     validate, print problems, exit 0/1
  posedge journal      stats|export|verify|backup DEST --config FILE
  posedge journal      salvage [--force] --config FILE   copy a damaged journal's readable rows
  posedge journal      rebuild-counters --date YYYYMMDD --config FILE
  posedge journal      quarantine list|retry [FLOW_NO...] --config FILE   transactions Redis cannot apply
  posedge sync         now | manifest [--date D] | quarantine list|retry [FLOW_NO...] --config FILE
  posedge support-bundle [--config FILE] [--out FILE]   one archive for support
  posedge gen-admin-token [--out FILE] | gen-terminal-key ID   new secret and its config line
  posedge version
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "posedge:", ee.err)
		}
		os.Exit(ee.code)
	default:
		fmt.Fprintln(os.Stderr, "posedge:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &exitError{code: 2}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return (&runCommand{}).Run(ctx, rest, stderr)
	case "check-config":
		return (&checkConfigCommand{}).Run(ctx, rest, stdout)
	case "status":
		return (&statusCommand{}).Run(ctx, rest, stdout)
	case "journal":
		return (&journalCommand{}).Run(ctx, rest, stdout)
	case "sync":
		return (&syncCommand{}).Run(ctx, rest, stdout)
	case "support-bundle":
		return (&supportBundleCommand{}).Run(ctx, rest, stdout)
	case "gen-admin-token", "gen-terminal-key":
		return (&genCommand{what: cmd}).Run(ctx, rest, stdout)
	case "install", "uninstall", "start", "stop", "restart", "status-service":
		return (&serviceCommand{action: cmd}).Run(ctx, rest, stdout)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "posedge", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "posedge: unknown command %q\n\n%s", cmd, usage)
	return &exitError{code: 2}
}

// loadConfig reads the config named by --config (or the default path).
func loadConfig(path string) (*config.Config, error) {
	if path == "" {
		path = config.DefaultPath()
	}
	c, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	platformPaths(&c) // Windows: absolute paths under %ProgramData%\posedge
	return &c, nil
}

// newLogger builds the daemon's logger from the config.
func newLogger(w io.Writer, c *config.Config) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.Log.Level))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
