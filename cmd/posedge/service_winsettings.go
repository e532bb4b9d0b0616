package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/posedge/posedge/edge/config"
)

// What the Windows service is registered with, as data: service_windows.go
// applies it through golang.org/x/sys/windows/svc/mgr, and the tests check
// it on any OS (Windows itself cannot run here).

// recoveryAction is one SCM failure action: restart the service after Delay.
type recoveryAction struct {
	Restart bool
	Delay   time.Duration
}

// windowsServiceSettings are set on the service after kardianos created it.
type windowsServiceSettings struct {
	StartAutomatic   bool
	DelayedAutoStart bool // after the other automatic services: the network is up by then
	// Recovery is what the SCM does after the 1st, 2nd and every later
	// failure in ResetPeriod: restart, waiting longer each time.
	Recovery    []recoveryAction
	ResetPeriod time.Duration
	// RecoveryOnNonCrashFailures (FailureActionsOnNonCrashFailures):
	// also recover when the service reports SERVICE_STOPPED with a
	// non-zero exit code, not only when the process dies. Off: that is
	// how posedge stops on a damaged journal (exit 65), which a restart
	// cannot cure; every other failure ends the process, which the
	// recovery actions do restart (selfStopExit).
	RecoveryOnNonCrashFailures bool
	// StopTimeout bounds `posedge stop`/`restart`: our own wait for
	// SERVICE_STOPPED instead of kardianos' loop, which can spin forever
	// (kardianos/service #337).
	StopTimeout time.Duration
	// Account is the service's logon: a virtual account, which Windows
	// makes for the service alone (no password, no interactive logon),
	// rather than LocalSystem, which can do anything on the PC.
	Account string
}

func windowsSettings() windowsServiceSettings {
	return windowsServiceSettings{
		StartAutomatic:   true,
		DelayedAutoStart: true,
		Recovery: []recoveryAction{
			{Restart: true, Delay: 5 * time.Second},
			{Restart: true, Delay: 30 * time.Second},
			{Restart: true, Delay: 60 * time.Second},
		},
		ResetPeriod:                24 * time.Hour,
		RecoveryOnNonCrashFailures: false,
		StopTimeout:                40 * time.Second, // the daemon's own shutdown takes at most ~30 s
		Account:                    `NT SERVICE\` + serviceName,
	}
}

// dataACLArgs are the icacls arguments that leave the data folder
// (config, admin token, journal) to Administrators, SYSTEM and the
// service's account only: inherited entries removed (by default every
// local user may read %ProgramData%), full control for the first two,
// modify for the service. SIDs, not names, for the built-in groups, so
// that a localised Windows matches too.
func dataACLArgs(dir, account string) []string {
	return []string{dir, "/inheritance:r",
		"/grant:r", "*S-1-5-32-544:(OI)(CI)F", // Administrators
		"/grant:r", "*S-1-5-18:(OI)(CI)F", // SYSTEM
		"/grant:r", account + ":(OI)(CI)M",
		"/T", "/Q"}
}

// windowsDataDir is %ProgramData%\posedge, where the config and the
// journal live on Windows.
func windowsDataDir(programData string) string {
	if programData == "" {
		programData = `C:\ProgramData`
	}
	return winJoin(programData, "posedge")
}

// linuxDefaultJournal is the contract's default journal.path; on Windows
// it means %ProgramData%\posedge\journal.db.
const linuxDefaultJournal = "/var/lib/posedge/journal.db"

// resolveWindowsPaths makes every path of a config absolute the way the
// service needs it: its working directory is C:\Windows\System32, so a
// relative path would land there. The default (Linux) journal path
// becomes %ProgramData%\posedge\journal.db; other relative paths are
// taken relative to the config file's folder (which is made absolute
// against cwd first). It returns the keys it changed, for the log.
func resolveWindowsPaths(c *config.Config, programData, cwd string) []string {
	if c.Path != "" && !winIsAbs(c.Path) {
		c.Path = winJoin(cwd, c.Path)
	}
	base := windowsDataDir(programData)
	if c.Path != "" {
		base = winDir(c.Path)
	}
	var changed []string
	fix := func(key string, p *string) {
		if *p == "" || winIsAbs(*p) {
			return
		}
		old := *p
		if key == "journal.path" && strings.ReplaceAll(*p, `\`, "/") == linuxDefaultJournal {
			*p = winJoin(windowsDataDir(programData), "journal.db")
		} else {
			*p = winJoin(base, *p)
		}
		changed = append(changed, key+": "+old+" → "+*p)
	}
	fix("journal.path", &c.Journal.Path)
	fix("admin.token_file", &c.Admin.TokenFile)
	fix("tls.cert_file", &c.TLS.CertFile)
	fix("tls.key_file", &c.TLS.KeyFile)
	fix("admin.tls.cert_file", &c.Admin.TLS.CertFile)
	fix("admin.tls.key_file", &c.Admin.TLS.KeyFile)
	fix("hq.creds_file", &c.HQ.CredsFile)
	fix("hq.ca_file", &c.HQ.CAFile)
	fix("hq.cert_file", &c.HQ.CertFile)
	fix("hq.key_file", &c.HQ.KeyFile)
	return changed
}

// winIsAbs reports whether p is an absolute Windows path: C:\x, C:/x or
// a UNC path \\server\share. "\x" (root of the current drive) is not.
func winIsAbs(p string) bool {
	if strings.HasPrefix(p, `\\`) || strings.HasPrefix(p, "//") {
		return true
	}
	return len(p) >= 3 && isLetter(p[0]) && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
}

func isLetter(b byte) bool { return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') }

// winJoin joins Windows path elements with backslashes. A rooted but
// drive-less p ("\data\x") takes the drive of dir.
func winJoin(dir, p string) string {
	p = strings.ReplaceAll(p, "/", `\`)
	if strings.HasPrefix(p, `\`) && len(dir) >= 2 && dir[1] == ':' {
		return dir[:2] + p
	}
	p = strings.TrimPrefix(p, `.\`)
	return strings.TrimRight(strings.ReplaceAll(dir, "/", `\`), `\`) + `\` + p
}

// winDir is the folder of a Windows path.
func winDir(p string) string {
	p = strings.ReplaceAll(p, "/", `\`)
	i := strings.LastIndex(p, `\`)
	if i < 0 {
		return "."
	}
	if i == 2 && p[1] == ':' {
		return p[:3]
	}
	return p[:i]
}

// waitForState polls query every `every` until it reports want, fails, or
// timeout passes. It is the bounded wait `posedge stop` uses on Windows.
func waitForState[S comparable](query func() (S, error), want S, timeout, every time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		got, err := query()
		if err != nil {
			return err
		}
		if got == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w after %v (state %v)", errStillRunning, timeout, got)
		}
		time.Sleep(every)
	}
}

// errStillRunning: the service did not reach the state asked for in time.
var errStillRunning = errors.New("service did not stop")
