package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
)

// The systemd unit, one template for both users of it: `posedge install`
// renders it with the absolute paths of the binary and the config and
// hands it to kardianos/service (option SystemdScript), and the packages
// ship it rendered with the packaged paths as
// packaging/systemd/posedge.service (TestPackagedUnitIsTheTemplate keeps
// the two equal; `go test ./cmd/posedge -run PackagedUnit -update`
// rewrites the file). It is ours rather than kardianos' built-in unit,
// which restarts only after 120 s and has no network ordering
// (kardianos/service #271, #123).
const unitTemplate = `# systemd unit of the posedge edge daemon. Rendered from cmd/posedge/service_unit.go:
# installed by the .deb/.rpm as /lib/systemd/system/posedge.service, and
# written by ` + "`posedge install`" + ` as /etc/systemd/system/posedge.service with the
# absolute paths of the binary and the config it was given.
[Unit]
Description=posedge store edge daemon
Documentation=https://github.com/posedge/posedge
Wants=network-online.target
After=network-online.target
# No ordering on Redis: posedge starts without it and sells in degraded
# mode until it answers.
# Up to 10 restarts a minute, then give up (visible in systemctl status).
StartLimitIntervalSec=60
StartLimitBurst=10

[Service]
Type=simple
User=posedge
Group=posedge
ExecStart=@EXEC@ run --config @CONFIG@
Restart=on-failure
RestartSec=2
# 65: the journal is damaged (posedge journal salvage); restarting cannot help.
RestartPreventExitStatus=65
# Let in-flight sales finish and the journal close cleanly.
KillSignal=SIGTERM
TimeoutStopSec=30
# SIGHUP reloads the TLS certificates without dropping connections.
ExecReload=/bin/kill -HUP $MAINPID
# /var/lib/posedge (the journal), created and owned by User=.
StateDirectory=posedge
StateDirectoryMode=0750
# Sandbox: ` + "`systemd-analyze security posedge.service`" + ` scores this at most 2.0
# (make test-tools checks it). The daemon needs TCP (terminals, admin,
# Redis, NATS), its journal folder and nothing else of the system.
UMask=0027
ProtectSystem=strict
ReadWritePaths=@RWPATHS@
ProtectHome=yes
PrivateTmp=yes
PrivateDevices=yes
PrivateMounts=yes
DevicePolicy=closed
NoNewPrivileges=yes
CapabilityBoundingSet=
AmbientCapabilities=
ProtectHostname=yes
ProtectClock=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectProc=invisible
ProcSubset=pid
RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
MemoryDenyWriteExecute=yes
RemoveIPC=yes
KeyringMode=private
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallFilter=~@privileged @resources
SystemCallErrorNumber=EPERM
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
`

// stateDir is the state directory of the unit (StateDirectory=posedge).
const stateDir = "/var/lib/posedge"

// unitParams are the paths a rendered unit refers to; all absolute.
type unitParams struct {
	Exe     string // the posedge binary
	Config  string // posedge.yaml
	Journal string // journal.path of that config ("" = the default under stateDir)
}

// packagedUnit is what the .deb and .rpm install.
var packagedUnit = unitParams{Exe: "/usr/bin/posedge", Config: "/etc/posedge/posedge.yaml"}

// renderUnit fills the template. A journal outside /var/lib/posedge gets
// its directory added to ReadWritePaths (ProtectSystem=strict makes every
// other path read-only); it must then be writable by the posedge user.
func renderUnit(p unitParams) string {
	rw := []string{stateDir}
	if p.Journal != "" {
		if d := filepath.Dir(p.Journal); d != stateDir && !strings.HasPrefix(d, stateDir+"/") {
			rw = append(rw, systemdQuote(d))
		}
	}
	return strings.NewReplacer("@EXEC@", systemdQuote(p.Exe), "@CONFIG@", systemdQuote(p.Config),
		"@RWPATHS@", strings.Join(rw, " ")).Replace(unitTemplate)
}

// systemdQuote quotes one word of a unit file's command line: systemd
// expands % specifiers and $VARIABLES there, and splits at spaces.
func systemdQuote(s string) string {
	s = strings.NewReplacer("%", "%%", "$", "$$").Replace(s)
	if !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// linuxInstallProblems are the reasons a unit with these paths could not
// run: the hardening of the unit hides home directories and /tmp from
// the service. Install refuses them rather than copying anything.
func linuxInstallProblems(p unitParams) []string {
	var probs []string
	check := func(what, path string) {
		for _, hidden := range []struct{ dir, why string }{
			{"/home/", "ProtectHome=yes"}, {"/root/", "ProtectHome=yes"}, {"/run/user/", "ProtectHome=yes"},
			{"/tmp/", "PrivateTmp=yes"}, {"/var/tmp/", "PrivateTmp=yes"},
		} {
			if strings.HasPrefix(path, hidden.dir) {
				probs = append(probs, fmt.Sprintf("%s %s is under %s, which the service cannot see (%s): copy it to a system path first, e.g. %s",
					what, path, strings.TrimSuffix(hidden.dir, "/"), hidden.why, map[string]string{
						"binary": "/usr/local/bin/posedge", "config": "/etc/posedge/posedge.yaml", "journal.path": "/var/lib/posedge/journal.db"}[what]))
			}
		}
		if strings.IndexFunc(path, unicode.IsControl) >= 0 {
			probs = append(probs, fmt.Sprintf("%s %q: a path with a control character (a newline would add a line to the unit) cannot be written into the unit", what, path))
		}
		if strings.Contains(path, "{{") {
			probs = append(probs, fmt.Sprintf("%s %s: a path with {{ cannot be written into the unit", what, path))
		}
	}
	check("binary", p.Exe)
	check("config", p.Config)
	if p.Journal != "" {
		check("journal.path", p.Journal)
	}
	return probs
}
