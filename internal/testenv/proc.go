package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// It picks below Linux's ephemeral range (32768-60999): a port from that
// range can be taken by any outgoing connection before the server that
// was meant to listen on it starts. Servers started on it still check
// that they could bind (see Redis's start-up retry).
func FreePort(t testing.TB) int {
	t.Helper()
	for i := 0; i < 200; i++ {
		port := 20000 + rand.IntN(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			l.Close()
			return port
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WaitFor polls ok every 25 ms until it holds or d has passed, then fails
// the test naming what it waited for.
func WaitFor(t testing.TB, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if ok() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// WaitForState is WaitFor whose condition also describes what it saw: on
// timeout the failure names the last state seen.
func WaitForState(t testing.TB, d time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		done, state := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last seen: %s", d, what, state)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// Proc is a child process of the test in a process group of its own,
// killed with the test binary even if it panics (Pdeathsig).
type Proc struct {
	Name string
	Args []string
	Log  string // file receiving stdout and stderr
	Env  []string

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	watched bool // the race check is registered with the test
}

// Start starts the process; it may be called again after it exited.
func (p *Proc) Start(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(p.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("open log of %s: %v", p.Name, err)
	}
	cmd := exec.Command(p.Args[0], p.Args[1:]...)
	cmd.Stdout, cmd.Stderr = f, f
	if p.Env != nil {
		cmd.Env = append(os.Environ(), p.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", p.Name, err)
	}
	done := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.done = cmd, done
	watched := p.watched
	p.watched = true
	p.mu.Unlock()
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	if !watched {
		// A race-built daemon (POSEDGE_RACE=1) only prints what the race
		// detector found, to its log, and goes on; the test that started
		// it is what must fail.
		t.Cleanup(func() {
			if r := p.RaceReport(); r != "" {
				t.Errorf("%s reported a data race (whole log: %s):\n%s", p.Name, p.Log, r)
			}
		})
	}
}

// raceBanner opens and closes each report of Go's race detector.
const raceBanner = "=================="

// RaceReport returns the first report of Go's race detector in the
// process log ("WARNING: DATA RACE" up to its closing banner), or "".
func (p *Proc) RaceReport() string {
	b, err := os.ReadFile(p.Log)
	if err != nil {
		return ""
	}
	return firstRaceReport(string(b))
}

func firstRaceReport(log string) string {
	i := strings.Index(log, "WARNING: DATA RACE")
	if i < 0 {
		return ""
	}
	r := log[i:]
	if j := strings.Index(r, "\n"+raceBanner); j >= 0 {
		r = r[:j]
	}
	const most = 8000
	if len(r) > most {
		r = r[:most] + "\n…"
	}
	return r
}

// Running reports whether the process has been started and not exited.
func (p *Proc) Running() bool {
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// Pid is the process's id while it runs, else 0.
func (p *Proc) Pid() int {
	if !p.Running() {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// Signal sends sig to the process group.
func (p *Proc) Signal(sig syscall.Signal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// Kill sends SIGKILL to the process group and waits until it is gone.
func (p *Proc) Kill() {
	if !p.Running() {
		return
	}
	p.mu.Lock()
	pid, done := p.cmd.Process.Pid, p.done
	p.mu.Unlock()
	_ = syscall.Kill(-pid, syscall.SIGCONT)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-done
}

// Terminate sends SIGTERM and waits up to d for a clean exit, then kills.
func (p *Proc) Terminate(d time.Duration) error {
	if !p.Running() {
		return nil
	}
	p.mu.Lock()
	done := p.done
	p.mu.Unlock()
	p.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(d):
		p.Kill()
		return fmt.Errorf("%s did not exit within %v of SIGTERM", p.Name, d)
	}
}

// Tail returns the last n bytes of the process log.
func (p *Proc) Tail(n int) string {
	b, _ := os.ReadFile(p.Log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
