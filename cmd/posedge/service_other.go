//go:build !windows

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strings"

	"github.com/kardianos/service"

	"github.com/posedge/posedge/edge/config"
)

const adminHint = " (run it as root)"

// runDaemon is `posedge run`. systemd needs no protocol beyond SIGTERM,
// so the service and the foreground are one and the same here.
func runDaemon(ctx context.Context, path string, stderr io.Writer) error {
	return runForeground(ctx, path, stderr)
}

// platformPaths leaves paths as written on Unix: relative paths are
// relative to the working directory, as for any Unix daemon.
func platformPaths(*config.Config) []string { return nil }

// installService registers the unit. With systemd it is our unit (User=
// posedge, hardening); the posedge system user is created when missing.
// Binaries or configs the hardened unit could not see are refused.
func installService(s service.Service, spec serviceSpec, out io.Writer) error {
	systemd := strings.Contains(s.Platform(), "systemd")
	if runtime.GOOS == "linux" && systemd {
		if probs := linuxInstallProblems(spec.unit()); len(probs) > 0 {
			return fmt.Errorf("install: %s", strings.Join(probs, "\n  "))
		}
		if err := ensureSystemUser(out); err != nil {
			return err
		}
		for _, p := range []string{spec.Config} {
			if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o044 == 0 {
				fmt.Fprintf(out, "note: %s is readable by its owner only; let the service read it: chgrp posedge %s && chmod 640 %s\n", p, p, p)
			}
		}
	} else if runtime.GOOS == "linux" {
		fmt.Fprintf(out, "note: init system %s (not systemd): kardianos' own script is installed; it runs posedge as root without the unit's hardening\n", s.Platform())
	}
	if err := s.Install(); err != nil {
		return fmt.Errorf("install service %s: %w%s", serviceName, err, adminHint)
	}
	return nil
}

// ensureSystemUser creates the posedge system user the unit runs as, as
// the packages' preinstall does.
func ensureSystemUser(out io.Writer) error {
	if _, err := user.Lookup("posedge"); err == nil {
		return nil
	}
	cmd := exec.Command("useradd", "--system", "--user-group", "--home-dir", stateDir, "--no-create-home",
		"--shell", "/usr/sbin/nologin", "--comment", "posedge store edge daemon", "posedge")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("create the posedge system user (useradd): %v: %s%s", err, strings.TrimSpace(string(b)), adminHint)
	}
	fmt.Fprintln(out, "created system user posedge")
	return nil
}

func stopService(s service.Service) error { return s.Stop() }

func restartService(s service.Service) error { return s.Restart() }

// eventLogTail has no meaning outside Windows.
func eventLogTail(context.Context) ([]byte, error) {
	return nil, errors.New("no Windows Event Log on " + runtime.GOOS)
}
