package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kardianos/service"

	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/edge/daemon"
)

// serviceName is the systemd unit (posedge.service) and the Windows
// service name.
const serviceName = "posedge"

// serviceCommand is `posedge install|uninstall|start|stop|restart|
// status-service`: it registers and controls the system service
// (systemd or the Windows SCM) through github.com/kardianos/service.
// The service runs `posedge run --config ABS` — the same code path as in
// the foreground (runDaemon, service_other.go / service_windows.go).
type serviceCommand struct{ action string }

// serviceSpec is what install records: absolute paths, nothing copied.
type serviceSpec struct {
	Exe     string
	Config  string
	Journal string // journal.path of the config, resolved; only for install
}

func (sp serviceSpec) args() []string { return []string{"run", "--config", sp.Config} }

func (sp serviceSpec) unit() unitParams {
	return unitParams{Exe: sp.Exe, Config: sp.Config, Journal: sp.Journal}
}

func (c *serviceCommand) Run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("posedge "+c.action, flag.ContinueOnError)
	cf := addConfigFlag(fs)
	force := false
	if c.action == "uninstall" {
		fs.BoolVar(&force, "force", false, "uninstall even while the journal holds transactions not yet at HQ")
	}
	if err := fs.Parse(args); err != nil {
		return &exitError{code: 2}
	}
	spec, err := newServiceSpec(cf.Path())
	if err != nil {
		return err
	}
	if c.action == "install" {
		// Nothing starts on an invalid config, so nothing is registered
		// with one either.
		cfg, err := loadConfig(spec.Config)
		if err != nil {
			return fmt.Errorf("install: %w\n(fix it and check with: posedge check-config --config %s)", err, spec.Config)
		}
		spec.Journal = cfg.Journal.Path
	}
	s, err := service.New(&program{}, serviceConfig(spec))
	if err != nil {
		return fmt.Errorf("posedge %s: %w", c.action, err)
	}
	switch c.action {
	case "install":
		if err := installService(s, spec, stdout); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "installed service %s (%s): %s %s %s %s\nstart it with: posedge start\n",
			serviceName, s.Platform(), spec.Exe, spec.args()[0], spec.args()[1], spec.args()[2])
	case "uninstall":
		if !force {
			if err := uninstallGuard(ctx, spec.Config); err != nil {
				return err
			}
		}
		if err := s.Uninstall(); err != nil {
			return fmt.Errorf("uninstall service %s: %w%s", serviceName, err, adminHint)
		}
		fmt.Fprintf(stdout, "service %s removed (the config and the journal are kept)\n", serviceName)
	case "start":
		if err := s.Start(); err != nil {
			return fmt.Errorf("start service %s: %w%s", serviceName, err, adminHint)
		}
		fmt.Fprintf(stdout, "service %s started; check it with: posedge status\n", serviceName)
	case "stop":
		if err := stopService(s); err != nil {
			return fmt.Errorf("stop service %s: %w%s", serviceName, err, adminHint)
		}
		fmt.Fprintf(stdout, "service %s stopped\n", serviceName)
	case "restart":
		if err := restartService(s); err != nil {
			return fmt.Errorf("restart service %s: %w%s", serviceName, err, adminHint)
		}
		fmt.Fprintf(stdout, "service %s restarted; check it with: posedge status\n", serviceName)
	case "status-service":
		st, err := s.Status()
		msg, code := serviceStatusLine(st, err)
		fmt.Fprintf(stdout, "service %s: %s\n", serviceName, msg)
		if code != 0 {
			return &exitError{code: code}
		}
	}
	return nil
}

// serviceStatusLine words a service state; the exit codes are those of an
// LSB init script's status: 0 running, 3 stopped, 4 unknown/not installed.
func serviceStatusLine(st service.Status, err error) (string, int) {
	switch {
	case errors.Is(err, service.ErrNotInstalled):
		return "not installed (install it with: posedge install --config FILE)", 4
	case err != nil:
		// SysV scripts answer "not running" with a bare exit status.
		return "not running, or its state is unknown (service manager: " + err.Error() + ")", 4
	case st == service.StatusRunning:
		return "running (posedge status tells how the store is)", 0
	case st == service.StatusStopped:
		return "stopped (start it with: posedge start)", 3
	}
	return "unknown", 4
}

// newServiceSpec makes the binary's and the config's paths absolute: the
// service starts in / (Linux) or C:\Windows\System32 (Windows).
func newServiceSpec(configPath string) (serviceSpec, error) {
	exe, err := os.Executable()
	if err != nil {
		return serviceSpec{}, fmt.Errorf("find the posedge binary: %w", err)
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return serviceSpec{}, err
	}
	if configPath == "" {
		configPath = config.DefaultPath()
	}
	abs, err := filepath.Abs(configPath)
	if err != nil {
		return serviceSpec{}, fmt.Errorf("config path %s: %w", configPath, err)
	}
	return serviceSpec{Exe: exe, Config: abs}, nil
}

// serviceConfig is the kardianos description of the service. On systemd
// our own unit replaces kardianos' template; on Windows the start type
// and delayed start are set here and the recovery actions after install
// (service_windows.go).
func serviceConfig(sp serviceSpec) *service.Config {
	st := windowsSettings()
	return &service.Config{
		Name:        serviceName,
		DisplayName: "posedge store edge daemon",
		Description: "posedge: sales, stock and rate limits for the store's tills; journals every sale and replays it to headquarters.",
		Executable:  sp.Exe,
		Arguments:   sp.args(),
		Option: service.KeyValue{
			"SystemdScript":    renderUnit(sp.unit()),
			"StartType":        "automatic",
			"DelayedAutoStart": st.DelayedAutoStart,
			"Restart":          "on-failure", // used by the non-systemd Linux scripts that honour it
		},
	}
}

// runForeground is `posedge run` outside a service manager's protocol
// (and under systemd, which needs none): load, log to stderr, serve until
// the signal.
func runForeground(ctx context.Context, path string, stderr io.Writer) error {
	cfg, err := loadConfig(path)
	if err != nil {
		return err
	}
	return damagedJournal(daemon.Run(ctx, cfg, version, newLogger(stderr, cfg)), path)
}
