package testenv

import (
	"bufio"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// countingEcho answers every line with itself and counts the lines it
// received, so a test sees what reached the server whatever came back.
func countingEcho(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var got atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					got.Add(1)
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String(), &got
}

func TestFaultProxyOneWay(t *testing.T) {
	addr, received := countingEcho(t)
	p := StartFaultProxy(t, addr)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(c, r, "one", 2*time.Second); err != nil || got != "one\n" {
		t.Fatalf("pass: %q %v", got, err)
	}

	// Answers dropped: the request reaches the server, nothing comes back.
	p.Set(DropAnswers, 0)
	got, err := roundTrip(c, r, "lost answer", 500*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("drop answers: %q %v, want a read timeout", got, err)
	}
	WaitFor(t, 2*time.Second, "the request to reach the server", func() bool { return received.Load() == 2 })
	WaitFor(t, 2*time.Second, "the answer counted as dropped", func() bool {
		sent, dropped := p.AnswersLost()
		return sent == int64(len("lost answer\n")) && dropped == int64(len("lost answer\n"))
	})

	// Healed: the lost answer stays lost, the next one comes back.
	p.Set(Pass, 0)
	if got, err := roundTrip(c, r, "two", 2*time.Second); err != nil || got != "two\n" {
		t.Fatalf("pass again: %q %v", got, err)
	}

	// Answers delayed: requests are not, answers are.
	p.Set(DelayAnswers, 300*time.Millisecond)
	before := received.Load()
	start := time.Now()
	if _, err := c.Write([]byte("slow\n")); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 250*time.Millisecond, "the request to reach the server at once", func() bool { return received.Load() == before+1 })
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "slow\n" {
		t.Fatalf("delay answers: %q %v", got, err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("delayed answer came after %v, want at least 300ms", took)
	}
}
