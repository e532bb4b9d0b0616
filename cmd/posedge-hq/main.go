// Command posedge-hq is the headquarters receiver: it consumes the
// transactions the stores replay over NATS JetStream and stores each once.
//
//	posedge-hq run --config FILE
//	posedge-hq catalog import --config FILE FILE.csv
//	posedge-hq stores [--config FILE] [--json]
//	posedge-hq check-config [--config FILE]
//	posedge-hq version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/posedge/posedge/internal/cpuprofile"
	"github.com/posedge/posedge/sync/hq"
)

// version is set at build time: -ldflags "-X main.version=1.2.3".
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a command line that cannot be run: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

const usage = `usage:
  posedge-hq run --config FILE [--log-format text|json] [--log-level debug|info|warn|error] [--cpuprofile FILE]
  posedge-hq catalog import [--config FILE] FILE.csv
  posedge-hq stores [--config FILE] [--json] [--timeout 5s]   (exit 0 fleet OK, 1 a store silent/incomplete/conflicting, 3 posedge-hq not asked)
  posedge-hq check-config [--config FILE]
  posedge-hq version
`

// run runs one subcommand and returns the exit status: 0 done, 1 failed
// (a config error included), 2 usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "run":
		err = (&runCommand{stderr: stderr}).Run(ctx, args[1:])
	case "catalog":
		err = (&catalogCommand{stdout: stdout, stderr: stderr}).Run(ctx, args[1:])
	case "stores":
		err = (&storesCommand{stdout: stdout, now: time.Now}).Run(ctx, args[1:])
	case "check-config":
		err = (&checkConfigCommand{stdout: stdout}).Run(ctx, args[1:])
	case "version":
		if len(args) > 1 {
			err = &usageError{"version takes no arguments"}
			break
		}
		fmt.Fprintln(stdout, "posedge-hq", version)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
	default:
		err = &usageError{fmt.Sprintf("unknown command %q", args[0])}
	}
	var ue *usageError
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ee.msg != "" {
			fmt.Fprintf(stderr, "posedge-hq: %s\n", ee.msg)
		}
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "posedge-hq: %v\n%s", err, usage)
		return 2
	default:
		fmt.Fprintf(stderr, "posedge-hq: %v\n", err)
		return 1
	}
}

// runCommand is `posedge-hq run`: the receiver in the foreground.
type runCommand struct {
	stderr io.Writer
}

func (c *runCommand) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", hq.DefaultConfigPath, "config file")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile (go tool pprof) of the run to this file, ended by SIGTERM")
	if err := fs.Parse(args); err != nil {
		return &usageError{"run: " + err.Error()}
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("run: unexpected argument %q", fs.Arg(0))}
	}
	if *cpuProfile != "" {
		stop, err := cpuprofile.Start(*cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	log, err := newLogger(c.stderr, *logFormat, *logLevel)
	if err != nil {
		return &usageError{"run: " + err.Error()}
	}
	cfg, err := hq.LoadConfig(*configPath)
	if errors.Is(err, hq.ErrNoConfig) {
		return fmt.Errorf("%w (write one or pass --config FILE)", err)
	}
	if err != nil {
		return fmt.Errorf("invalid config, nothing started:\n%w", err)
	}
	// gc_percent is Go's GOGC for this process; an operator's GOGC in the
	// environment wins (the runtime read it at start).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(cfg.GCPercent)
		log.Debug("garbage collector target set from the config", "gc_percent", cfg.GCPercent)
	}
	return hq.NewServer(cfg, log, version).Run(ctx)
}

func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}
