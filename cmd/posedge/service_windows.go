//go:build windows

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/kardianos/service"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/eventlog"
	"golang.org/x/sys/windows/svc/mgr"

	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/edge/daemon"
)

const adminHint = " (run it from an elevated prompt: Run as administrator)"

// runDaemon is `posedge run`. Started by the SCM it speaks the service
// protocol (scmHandler) and logs to the Event Log through
// kardianos/service's logger; the daemon itself is the same daemon.Run as
// in the foreground.
func runDaemon(ctx context.Context, path string, stderr io.Writer) error {
	inService, err := svc.IsWindowsService()
	if err != nil || !inService {
		return runForeground(ctx, path, stderr)
	}
	prg := &program{stopTimeout: 30 * time.Second, exit: os.Exit}
	s, err := service.New(prg, &service.Config{Name: serviceName})
	if err != nil {
		return err
	}
	// The Event Log source: `posedge install` registers it; a service the
	// MSI registered gets it here (an "exists" error is the normal case).
	_ = eventlog.InstallAsEventCreate(serviceName, eventlog.Error|eventlog.Warning|eventlog.Info)
	elog, err := s.Logger(nil)
	if err != nil {
		return err
	}
	prg.log = slog.New(newEventLogHandler(elog, slog.LevelInfo))
	prg.run = func(ctx context.Context) error {
		cfg, err := loadConfig(path) // paths made absolute (platformPaths)
		if err != nil {
			return err
		}
		var lvl slog.Level
		_ = lvl.UnmarshalText([]byte(cfg.Log.Level))
		log := slog.New(newEventLogHandler(elog, lvl))
		// Services registered by other means (the MSI) get the same
		// recovery actions on their first start.
		if err := applyWindowsSettings(windowsSettings()); err != nil {
			log.Warn("could not set the service's recovery actions", "err", err)
		}
		return damagedJournal(daemon.Run(ctx, cfg, version, log), path)
	}
	h := &scmHandler{prg: prg}
	if err := svc.Run(serviceName, h); err != nil {
		return fmt.Errorf("run as the service %s: %w", serviceName, err)
	}
	if code := h.refusedWith.Load(); code != 0 {
		// SERVICE_STOPPED is reported already: this exit is no crash.
		return &exitError{code: int(code)}
	}
	return nil
}

// scmHandler is the service's side of the SCM protocol (svc.Handler).
// Ours rather than kardianos' Execute, which returns only when the SCM
// asks the service to stop: a daemon that refuses to serve could then
// only end the process — a crash to the SCM, whose recovery actions
// restart it, in a loop on a damaged journal. Here it reports
// SERVICE_STOPPED with the service-specific exit code instead (65, a
// non-crash failure, not recovered from: see selfStopExit).
type scmHandler struct {
	prg         *program
	refusedWith atomic.Uint32 // set by Execute (the SCM's thread), read once svc.Run returned
}

func (h *scmHandler) Execute(_ []string, reqs <-chan svc.ChangeRequest, changes chan<- svc.Status) (bool, uint32) {
	changes <- svc.Status{State: svc.StartPending}
	_ = h.prg.Start(nil) // never fails: the daemon starts in its own goroutine
	changes <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	refused := h.prg.Refused()
	for {
		select {
		case c := <-reqs:
			switch c.Cmd {
			case svc.Interrogate:
				changes <- c.CurrentStatus
			case svc.Stop, svc.Shutdown:
				changes <- svc.Status{State: svc.StopPending}
				_ = h.prg.Stop(nil) // bounded by its stopTimeout, never an error
				return false, 0
			}
		case code := <-refused:
			h.refusedWith.Store(code)
			return true, code
		}
	}
}

// platformPaths makes the config's paths absolute under
// %ProgramData%\posedge (the service's working directory is System32).
func platformPaths(c *config.Config) []string {
	cwd, _ := os.Getwd()
	return resolveWindowsPaths(c, os.Getenv("ProgramData"), cwd)
}

// installService registers the service with kardianos (which also makes
// the Event Log source), then sets what kardianos cannot: escalating
// recovery actions (crashes only: a refusal to serve is not recovered
// from), delayed auto-start.
func installService(s service.Service, spec serviceSpec, out io.Writer) error {
	if err := os.MkdirAll(winDir(spec.Journal), 0o750); err != nil {
		return fmt.Errorf("create the journal's folder: %w", err)
	}
	if err := s.Install(); err != nil {
		return fmt.Errorf("install service %s: %w%s", serviceName, err, adminHint)
	}
	st := windowsSettings()
	if err := applyWindowsSettings(st); err != nil {
		return fmt.Errorf("service %s installed, but its recovery settings failed: %w", serviceName, err)
	}
	if err := setServiceAccount(st.Account); err != nil {
		return fmt.Errorf("service %s installed, but its account could not be set to %s: %w", serviceName, st.Account, err)
	}
	dataDir := windowsDataDir(os.Getenv("ProgramData"))
	if b, err := exec.Command("icacls", dataACLArgs(dataDir, st.Account)...).CombinedOutput(); err != nil {
		return fmt.Errorf("service %s installed, but the access list of %s could not be set: %w: %s", serviceName, dataDir, err, b)
	}
	fmt.Fprintf(out, "runs as %s; %s readable by Administrators, SYSTEM and that account only\n", st.Account, dataDir)
	fmt.Fprintf(out, "recovery: restart after 5s, 30s, 60s; delayed automatic start; logs in the Event Log (Application, source %s)\n", serviceName)
	return nil
}

// applyWindowsSettings sets the recovery actions and the start type.
func applyWindowsSettings(st windowsServiceSettings) error {
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(serviceName)
	if err != nil {
		return err
	}
	defer s.Close()
	acts := make([]mgr.RecoveryAction, 0, len(st.Recovery))
	for _, a := range st.Recovery {
		t := mgr.NoAction
		if a.Restart {
			t = mgr.ServiceRestart
		}
		acts = append(acts, mgr.RecoveryAction{Type: t, Delay: a.Delay})
	}
	if err := s.SetRecoveryActions(acts, uint32(st.ResetPeriod/time.Second)); err != nil {
		return fmt.Errorf("set recovery actions: %w", err)
	}
	if err := s.SetRecoveryActionsOnNonCrashFailures(st.RecoveryOnNonCrashFailures); err != nil {
		return fmt.Errorf("set recovery on non-crash failures: %w", err)
	}
	c, err := s.Config()
	if err != nil {
		return err
	}
	want := uint32(mgr.StartManual)
	if st.StartAutomatic {
		want = mgr.StartAutomatic
	}
	if c.StartType != want || c.DelayedAutoStart != st.DelayedAutoStart {
		c.StartType, c.DelayedAutoStart = want, st.DelayedAutoStart
		if err := s.UpdateConfig(c); err != nil {
			return fmt.Errorf("set delayed automatic start: %w", err)
		}
	}
	return nil
}

// setServiceAccount makes the service log on as account, a virtual
// account (no password). Only at install, with the data folder's access
// list set right after: at a later start the folder could not be
// written by the new account.
func setServiceAccount(account string) error {
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(serviceName)
	if err != nil {
		return err
	}
	defer s.Close()
	c, err := s.Config()
	if err != nil {
		return err
	}
	c.ServiceStartName, c.Password = account, ""
	return s.UpdateConfig(c)
}

// stopService stops through the SCM and waits for SERVICE_STOPPED with a
// deadline of our own, not kardianos' wait loop (#337), which never
// leaves when the deadline passes.
func stopService(service.Service) error {
	m, err := mgr.Connect()
	if err != nil {
		return err
	}
	defer m.Disconnect()
	s, err := m.OpenService(serviceName)
	if err != nil {
		return err
	}
	defer s.Close()
	q, err := s.Query()
	if err != nil {
		return err
	}
	if q.State == svc.Stopped {
		return nil
	}
	if q.State != svc.StopPending {
		if _, err := s.Control(svc.Stop); err != nil {
			return err
		}
	}
	return waitForState(func() (svc.State, error) {
		q, err := s.Query()
		return q.State, err
	}, svc.Stopped, windowsSettings().StopTimeout, 200*time.Millisecond)
}

func restartService(s service.Service) error {
	if err := stopService(s); err != nil {
		return err
	}
	return s.Start()
}

// eventLogTail reads the service's recent Event Log entries (newest first).
func eventLogTail(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "wevtutil", "qe", "Application",
		"/q:*[System[Provider[@Name='"+serviceName+"']]]", "/c:2000", "/rd:true", "/f:text").CombinedOutput()
}
