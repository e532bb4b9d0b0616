package main

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/kardianos/service"
)

// program is what kardianos/service drives when the Windows SCM runs
// posedge: Start launches the very function `posedge run` calls (run)
// under a context of its own; Stop cancels that context and waits for it
// to return, bounded by stopTimeout. It is plain Go, tested on Linux.
type program struct {
	run         func(ctx context.Context) error // daemon.Run with the config and logger bound
	log         *slog.Logger
	stopTimeout time.Duration
	// exit ends the process when the daemon stops by itself for a reason
	// a restart may cure: to the SCM a process gone without reporting
	// SERVICE_STOPPED is a crash, and its recovery actions restart it
	// (os.Exit).
	exit func(code int)

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan error
	refused chan uint32 // the service-specific exit code when the daemon refuses to serve
}

// selfStopExit says how the service ends when the daemon returned
// without being asked to stop. A damaged journal (exit 65, like `posedge
// run` in the foreground) is not cured by a restart: the service reports
// SERVICE_STOPPED with that service-specific exit code — a non-crash
// failure, which the SCM does not recover from (the service never sets
// FailureActionsOnNonCrashFailures), so there is no restart loop. Any
// other failure (a port in use, Redis' address unresolvable, an invalid
// config) ends the process with 1, which the SCM restarts after its
// recovery delays, as systemd's Restart=on-failure does.
func selfStopExit(err error) (code uint32, restart bool) {
	var ee *exitError
	if errors.As(err, &ee) && ee.code == exitJournalDamaged {
		return exitJournalDamaged, false
	}
	return 1, true
}

// Start is called by kardianos once the SCM has started the service.
func (p *program) Start(service.Service) error {
	ctx, cancel := context.WithCancel(context.Background())
	done, refused := make(chan error, 1), make(chan uint32, 1)
	p.mu.Lock()
	p.cancel, p.done, p.refused = cancel, done, refused
	p.mu.Unlock()
	go func() {
		err := p.run(ctx)
		done <- err
		if ctx.Err() != nil {
			return
		}
		// Nobody asked it to stop: a listener failed, the journal could
		// not be opened or is damaged…
		code, restart := selfStopExit(err)
		if restart {
			p.log.Error("posedge stopped by itself; exiting so the service manager restarts it", "err", err)
			p.exit(int(code))
			return
		}
		p.log.Error("posedge refuses to serve; the service stops and is not restarted", "exit_code", code, "err", err)
		refused <- code
	}()
	return nil
}

// Refused delivers the service-specific exit code when the daemon
// refused to serve (see selfStopExit): the service handler then reports
// SERVICE_STOPPED with it. Nil before Start.
func (p *program) Refused() <-chan uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refused
}

// Stop is called on SCM stop and shutdown. It never returns an error: an
// error would make the SCM treat an operator's stop as a failure and
// restart the service.
func (p *program) Stop(service.Service) error {
	p.mu.Lock()
	cancel, done := p.cancel, p.done
	p.mu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			p.log.Warn("posedge stopped with an error", "err", err)
		}
	case <-time.After(p.stopTimeout):
		p.log.Error("posedge did not stop in time; the service manager ends the process", "timeout", p.stopTimeout)
	}
	return nil
}

// serviceLogger is the part of kardianos' service.Logger the Event Log
// handler uses.
type serviceLogger interface {
	Error(v ...any) error
	Warning(v ...any) error
	Info(v ...any) error
}

// eventLogHandler is a slog.Handler writing each record as one text line
// to the service logger (the Windows Event Log), at the matching level.
type eventLogHandler struct {
	inner slog.Handler // a TextHandler writing into buf
	buf   *bytes.Buffer
	mu    *sync.Mutex
	sink  serviceLogger
}

func newEventLogHandler(sink serviceLogger, level slog.Leveler) *eventLogHandler {
	buf := &bytes.Buffer{}
	return &eventLogHandler{inner: slog.NewTextHandler(buf, &slog.HandlerOptions{Level: level}), buf: buf, mu: &sync.Mutex{}, sink: sink}
}

func (h *eventLogHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *eventLogHandler) Handle(ctx context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.buf.Reset()
	if err := h.inner.Handle(ctx, r); err != nil {
		return err
	}
	line := string(bytes.TrimRight(h.buf.Bytes(), "\n"))
	switch {
	case r.Level >= slog.LevelError:
		return h.sink.Error(line)
	case r.Level >= slog.LevelWarn:
		return h.sink.Warning(line)
	}
	return h.sink.Info(line)
}

func (h *eventLogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &eventLogHandler{inner: h.inner.WithAttrs(as), buf: h.buf, mu: h.mu, sink: h.sink}
}

func (h *eventLogHandler) WithGroup(name string) slog.Handler {
	return &eventLogHandler{inner: h.inner.WithGroup(name), buf: h.buf, mu: h.mu, sink: h.sink}
}
