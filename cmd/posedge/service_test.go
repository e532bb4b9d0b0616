package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kardianos/service"

	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/offline/journal"

	"github.com/posedge/posedge/internal/testenv/golden"
)

const packagedUnitFile = "../../packaging/systemd/posedge.service"

// The packages ship exactly what `posedge install` writes, with the
// packaged paths: one template, two users.
func TestPackagedUnitIsTheTemplate(t *testing.T) {
	got := renderUnit(packagedUnit)
	if golden.Update() {
		if err := os.WriteFile(packagedUnitFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(packagedUnitFile)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Fatalf("%s differs from renderUnit(packagedUnit); run go test ./cmd/posedge -run PackagedUnit -update\n%s", packagedUnitFile, got)
	}
	for _, line := range []string{
		"Wants=network-online.target", "After=network-online.target", "Restart=on-failure", "RestartSec=2",
		"StartLimitIntervalSec=60", "StartLimitBurst=10", "User=posedge", "StateDirectory=posedge",
		"ProtectSystem=strict", "NoNewPrivileges=yes", "PrivateTmp=yes",
		"ExecStart=/usr/bin/posedge run --config /etc/posedge/posedge.yaml",
	} {
		if !strings.Contains(got, "\n"+line+"\n") {
			t.Errorf("unit lacks %q", line)
		}
	}
	// Start limits belong in [Unit] (systemd ignores them in [Service]).
	unitSection, _, _ := strings.Cut(got, "[Service]")
	if !strings.Contains(unitSection, "StartLimitBurst=") {
		t.Error("StartLimitBurst is not in [Unit]")
	}
	// kardianos renders SystemdScript with its own template engine: the
	// unit must hold no action for it, so it is written as rendered here.
	if strings.Contains(got, "{{") {
		t.Error("unit contains {{")
	}
}

func TestInstalledUnitRecordsAbsolutePaths(t *testing.T) {
	u := renderUnit(unitParams{Exe: "/opt/pos edge/posedge", Config: "/etc/posedge/store 1%.yaml", Journal: "/srv/posedge/journal.db"})
	for _, line := range []string{
		`ExecStart="/opt/pos edge/posedge" run --config "/etc/posedge/store 1%%.yaml"`,
		"ReadWritePaths=/var/lib/posedge /srv/posedge",
	} {
		if !strings.Contains(u, "\n"+line+"\n") {
			t.Errorf("unit lacks %q:\n%s", line, u)
		}
	}
	u = renderUnit(unitParams{Exe: "/usr/bin/posedge", Config: "/etc/posedge/posedge.yaml", Journal: "/var/lib/posedge/x/journal.db"})
	if !strings.Contains(u, "\nReadWritePaths=/var/lib/posedge\n") {
		t.Errorf("journal under the state dir needs no extra path:\n%s", u)
	}
}

func TestInstallRefusesPathsTheServiceCannotSee(t *testing.T) {
	if p := linuxInstallProblems(packagedUnit); len(p) != 0 {
		t.Fatalf("packaged paths refused: %v", p)
	}
	p := linuxInstallProblems(unitParams{Exe: "/home/tech/posedge", Config: "/tmp/posedge.yaml", Journal: "/root/j.db"})
	if len(p) != 3 || !strings.Contains(p[0], "ProtectHome") || !strings.Contains(p[1], "PrivateTmp") {
		t.Fatalf("problems %q", p)
	}
	// Issue 22 finding 9: a newline became an extra root ExecStartPre.
	p = linuxInstallProblems(unitParams{Exe: "/usr/local/bin/posedge", Config: "/etc/posedge/posedge.yaml",
		Journal: "/var/lib/posedge/j.db\nExecStartPre=/bin/sh -c id"})
	if len(p) != 1 || !strings.Contains(p[0], "control character") {
		t.Fatalf("problems of a journal path with a newline: %q", p)
	}
}

func TestServiceConfigRunsTheSameCommandAsRun(t *testing.T) {
	cfgPath := writeConfig(t, t.TempDir(), "127.0.0.1:1", filepath.Join(t.TempDir(), "j.db"))
	rel, _ := filepath.Rel(mustWd(t), cfgPath)
	sp, err := newServiceSpec(rel)
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(sp.Exe) || sp.Config != cfgPath {
		t.Fatalf("spec %+v: want absolute binary and config %s", sp, cfgPath)
	}
	c := serviceConfig(sp)
	if c.Name != "posedge" || c.Executable != sp.Exe || strings.Join(c.Arguments, " ") != "run --config "+cfgPath {
		t.Fatalf("service config %+v", c)
	}
	if c.Option["SystemdScript"] != renderUnit(sp.unit()) || c.Option["DelayedAutoStart"] != true {
		t.Fatalf("options %v", c.Option)
	}
	// run is what the service runs: the dispatcher knows it.
	if err := run(context.Background(), []string{"run", "--config", filepath.Join(t.TempDir(), "none.yaml")}, os.Stdout, os.Stderr); !errors.Is(err, config.ErrNoConfig) {
		t.Fatalf("posedge run with a missing config: %v", err)
	}
}

// What kardianos registers on Windows: the start type, and no recovery
// of its own (its OnFailure options would set actions at install only;
// ours are set by applyWindowsSettings at install and at every start,
// with FailureActionsOnNonCrashFailures off).
func TestServiceConfigForWindows(t *testing.T) {
	c := serviceConfig(serviceSpec{Exe: `C:\Program Files\posedge\posedge.exe`, Config: `C:\ProgramData\posedge\posedge.yaml`})
	for _, tc := range []struct {
		key  string
		want any // nil: must be absent
	}{
		{"StartType", "automatic"},
		{"DelayedAutoStart", true},
		{"OnFailure", nil},
		{"OnFailureDelayDuration", nil},
		{"OnFailureResetPeriod", nil},
		{"Interactive", nil},
		{"Password", nil},
	} {
		got, ok := c.Option[tc.key]
		if tc.want == nil && ok || tc.want != nil && got != tc.want {
			t.Errorf("option %s = %v (set %v), want %v", tc.key, got, ok, tc.want)
		}
	}
	if c.Executable != `C:\Program Files\posedge\posedge.exe` || strings.Join(c.Arguments, " ") != `run --config C:\ProgramData\posedge\posedge.yaml` || c.UserName != "" {
		t.Fatalf("service config %+v", c)
	}
}

func TestServiceStatusLine(t *testing.T) {
	for _, tc := range []struct {
		st   service.Status
		err  error
		code int
		word string
	}{
		{service.StatusRunning, nil, 0, "running"},
		{service.StatusStopped, nil, 3, "stopped"},
		{service.StatusUnknown, service.ErrNotInstalled, 4, "not installed"},
		{service.StatusUnknown, errors.New("access denied"), 4, "unknown (service manager: access denied)"},
	} {
		msg, code := serviceStatusLine(tc.st, tc.err)
		if code != tc.code || !strings.Contains(msg, tc.word) {
			t.Errorf("%v/%v: %q %d, want %q %d", tc.st, tc.err, msg, code, tc.word, tc.code)
		}
	}
}

// The Windows service settings, checked as data (Windows cannot run here).
func TestWindowsRecoverySettings(t *testing.T) {
	st := windowsSettings()
	want := []recoveryAction{{true, 5 * time.Second}, {true, 30 * time.Second}, {true, 60 * time.Second}}
	if fmt.Sprint(st.Recovery) != fmt.Sprint(want) {
		t.Fatalf("recovery %v, want %v", st.Recovery, want)
	}
	if !st.DelayedAutoStart || !st.StartAutomatic || st.ResetPeriod < time.Hour {
		t.Fatalf("settings %+v", st)
	}
	// A damaged journal stops the service with SERVICE_STOPPED and exit
	// 65, a non-crash failure: recovering from those would restart it in
	// a loop, as systemd would without RestartPreventExitStatus=65.
	if st.RecoveryOnNonCrashFailures {
		t.Fatal("FailureActionsOnNonCrashFailures set: a damaged journal would restart in a loop")
	}
	// The stop wait must outlast the daemon's own shutdown (10 s for
	// the listeners, then the journal) and the program's stop timeout.
	if st.StopTimeout < 30*time.Second {
		t.Fatalf("stop timeout %v", st.StopTimeout)
	}
}

func TestWindowsPathResolution(t *testing.T) {
	c := config.Defaults()
	c.Path = `C:\ProgramData\posedge\posedge.yaml`
	c.Admin.TokenFile = "admin.token"
	c.HQ.CredsFile = `creds\store.creds`
	c.TLS.CertFile = `D:\certs\pos.crt`
	c.HQ.CAFile = `\\fileserver\pki\ca.pem`
	changed := resolveWindowsPaths(&c, `C:\ProgramData`, `C:\Windows\System32`)
	for got, want := range map[string]string{
		c.Journal.Path:    `C:\ProgramData\posedge\journal.db`,
		c.Admin.TokenFile: `C:\ProgramData\posedge\admin.token`,
		c.HQ.CredsFile:    `C:\ProgramData\posedge\creds\store.creds`,
		c.TLS.CertFile:    `D:\certs\pos.crt`,
		c.HQ.CAFile:       `\\fileserver\pki\ca.pem`,
	} {
		if got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	if len(changed) != 3 {
		t.Errorf("changed %q", changed)
	}

	// A config given relative to the working directory (System32 for a
	// service) and a journal relative to the config.
	c = config.Defaults()
	c.Path = `stores\s1\posedge.yaml`
	c.Journal.Path = "data/journal.db"
	resolveWindowsPaths(&c, "", `E:\pos`)
	if c.Path != `E:\pos\stores\s1\posedge.yaml` || c.Journal.Path != `E:\pos\stores\s1\data\journal.db` {
		t.Errorf("path %s journal %s", c.Path, c.Journal.Path)
	}
	// No %ProgramData%: the Windows default.
	if d := windowsDataDir(""); d != `C:\ProgramData\posedge` {
		t.Errorf("data dir %s", d)
	}
	// Rooted without a drive: the config's drive.
	c = config.Defaults()
	c.Path = `D:\posedge\posedge.yaml`
	c.Journal.Path = `\posedge-data\journal.db`
	resolveWindowsPaths(&c, `C:\ProgramData`, `C:\`)
	if c.Journal.Path != `D:\posedge-data\journal.db` {
		t.Errorf("journal %s", c.Journal.Path)
	}
	for p, abs := range map[string]bool{`C:\x`: true, `c:/x`: true, `\\srv\s`: true, `\x`: false, `x`: false, `C:x`: false} {
		if winIsAbs(p) != abs {
			t.Errorf("winIsAbs(%q) = %v", p, !abs)
		}
	}
}

func TestWaitForStateIsBounded(t *testing.T) {
	n := 0
	if err := waitForState(func() (int, error) { n++; return n, nil }, 3, time.Second, time.Millisecond); err != nil || n != 3 {
		t.Fatalf("err %v after %d polls", err, n)
	}
	start := time.Now()
	err := waitForState(func() (string, error) { return "stop_pending", nil }, "stopped", 50*time.Millisecond, 5*time.Millisecond)
	if !errors.Is(err, errStillRunning) || time.Since(start) > time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	boom := errors.New("access denied")
	if err := waitForState(func() (int, error) { return 0, boom }, 1, time.Second, time.Millisecond); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
}

// Stop cancels the daemon's context and waits until it has returned.
func TestProgramStopCancelsAndWaits(t *testing.T) {
	var mu sync.Mutex
	var events []string
	note := func(s string) { mu.Lock(); events = append(events, s); mu.Unlock() }
	p := &program{stopTimeout: 5 * time.Second, log: slog.New(slog.DiscardHandler),
		exit: func(int) { note("exit") },
		run: func(ctx context.Context) error {
			note("running")
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond) // closing the journal
			note("returned")
			return nil
		}}
	if err := p.Start(nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	if err := p.Stop(nil); err != nil {
		t.Fatal(err)
	}
	note("stop returned")
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(events, ",") != "running,returned,stop returned" {
		t.Fatalf("events %v", events)
	}
}

// A daemon that ends by itself makes the process exit non-zero, so the
// service manager's recovery restarts it.
func TestProgramExitsWhenTheDaemonFails(t *testing.T) {
	exited := make(chan int, 1)
	p := &program{stopTimeout: time.Second, log: slog.New(slog.DiscardHandler), exit: func(c int) { exited <- c },
		run: func(context.Context) error { return errors.New("listen :8080: address in use") }}
	if err := p.Start(nil); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-exited:
		if c != 1 {
			t.Fatalf("exit %d", c)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no exit")
	}
}

// What the service does when the daemon returns by itself: only a
// damaged journal stops it for good (exit 65, the foreground's and the
// systemd unit's code); anything else ends the process so that the
// SCM's recovery actions restart it.
func TestSelfStopExit(t *testing.T) {
	damaged := fmt.Errorf("%w: C:\\ProgramData\\posedge\\journal.db: quick_check: page 7: btreeInitPage() returns error code 11", journal.ErrDamaged)
	for _, tc := range []struct {
		name    string
		err     error
		code    uint32
		restart bool
	}{
		{"damaged journal", damagedJournal(damaged, `C:\ProgramData\posedge\posedge.yaml`), exitJournalDamaged, false},
		{"damaged journal, wrapped again", fmt.Errorf("serve: %w", damagedJournal(damaged, "")), exitJournalDamaged, false},
		{"port in use", damagedJournal(errors.New("listen :8080: address in use"), ""), 1, true},
		{"journal not openable", errors.New("open journal: permission denied"), 1, true},
		{"invalid config", &exitError{code: 1, err: errors.New("store_id: required")}, 1, true},
		{"returned nil unasked", nil, 1, true},
	} {
		code, restart := selfStopExit(tc.err)
		if code != tc.code || restart != tc.restart {
			t.Errorf("%s: exit %d restart %v, want %d %v", tc.name, code, restart, tc.code, tc.restart)
		}
	}
}

// A daemon refusing a damaged journal does not end the process (a crash
// to the SCM, which would restart it): the program hands the exit code
// 65 to the service handler, which reports SERVICE_STOPPED with it, and
// the Event Log gets one line with the advice.
func TestProgramStopsCleanlyOnADamagedJournal(t *testing.T) {
	ev := &fakeEventLog{}
	exited := make(chan int, 1)
	p := &program{stopTimeout: time.Second, log: slog.New(newEventLogHandler(ev, slog.LevelInfo)), exit: func(c int) { exited <- c },
		run: func(context.Context) error {
			return damagedJournal(fmt.Errorf("%w: journal.db: quick_check: bad page", journal.ErrDamaged), `C:\ProgramData\posedge\posedge.yaml`)
		}}
	if p.Refused() != nil {
		t.Fatal("a refusal channel before Start")
	}
	if err := p.Start(nil); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-p.Refused():
		if code != exitJournalDamaged {
			t.Fatalf("refused with %d, want %d", code, exitJournalDamaged)
		}
	case c := <-exited:
		t.Fatalf("the process ended with %d: the SCM would restart it", c)
	case <-time.After(5 * time.Second):
		t.Fatal("no refusal reported")
	}
	select {
	case c := <-exited:
		t.Fatalf("the process ended with %d after the refusal", c)
	case <-time.After(100 * time.Millisecond):
	}
	if len(ev.lines) != 1 || !strings.HasPrefix(ev.lines[0], "E ") || !strings.Contains(ev.lines[0], "journal damaged") ||
		!strings.Contains(ev.lines[0], "posedge journal salvage --config") {
		t.Fatalf("event log %q, want one error line naming the damage and the salvage command", ev.lines)
	}
	// The SCM may still ask it to stop before the handler returned.
	if err := p.Stop(nil); err != nil {
		t.Fatal(err)
	}
}

// Stop never hangs on a daemon that does not return, and never fails.
func TestProgramStopIsBounded(t *testing.T) {
	p := &program{stopTimeout: 50 * time.Millisecond, log: slog.New(slog.DiscardHandler), exit: func(int) {},
		run: func(context.Context) error { select {} }}
	_ = p.Start(nil)
	start := time.Now()
	if err := p.Stop(nil); err != nil || time.Since(start) > time.Second {
		t.Fatalf("stop: %v after %v", err, time.Since(start))
	}
}

type fakeEventLog struct{ lines []string }

func (f *fakeEventLog) Error(v ...any) error {
	f.lines = append(f.lines, "E "+fmt.Sprint(v...))
	return nil
}
func (f *fakeEventLog) Warning(v ...any) error {
	f.lines = append(f.lines, "W "+fmt.Sprint(v...))
	return nil
}
func (f *fakeEventLog) Info(v ...any) error {
	f.lines = append(f.lines, "I "+fmt.Sprint(v...))
	return nil
}

func TestEventLogHandler(t *testing.T) {
	ev := &fakeEventLog{}
	log := slog.New(newEventLogHandler(ev, slog.LevelInfo)).With("store_id", "S001")
	log.Debug("hidden")
	log.Info("posedge serving", "listen", ":8080")
	log.WithGroup("redis").Warn("replica lagging", "lag", 3)
	log.Error("journal", "err", "disk full")
	if len(ev.lines) != 3 || !strings.HasPrefix(ev.lines[0], "I ") || !strings.Contains(ev.lines[0], "store_id=S001 listen=:8080") ||
		!strings.HasPrefix(ev.lines[1], "W ") || !strings.Contains(ev.lines[1], "redis.lag=3") ||
		!strings.HasPrefix(ev.lines[2], "E ") || strings.Contains(ev.lines[2], "\n") {
		t.Fatalf("event log lines %q", ev.lines)
	}
}

func mustWd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}
