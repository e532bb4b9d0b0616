package testenv

import (
	"bufio"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// echoServer answers every line with itself.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends line and waits up to d for it back.
func roundTrip(c net.Conn, r *bufio.Reader, line string, d time.Duration) (string, error) {
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	_ = c.SetReadDeadline(time.Now().Add(d))
	return r.ReadString('\n')
}

func TestFaultProxy(t *testing.T) {
	p := StartFaultProxy(t, echoServer(t))
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	if got, err := roundTrip(c, r, "one", 2*time.Second); err != nil || got != "one\n" {
		t.Fatalf("pass: %q %v", got, err)
	}

	// Black hole: the connection stays open, nothing comes back.
	p.Set(BlackHole, 0)
	got, err := roundTrip(c, r, "lost", 500*time.Millisecond)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("black hole: %q %v, want a read timeout on an open connection", got, err)
	}
	// A new connection is accepted and goes nowhere either.
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial while black-holed: %v", err)
	}
	if got, err := roundTrip(c2, bufio.NewReader(c2), "nowhere", 300*time.Millisecond); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("new connection while black-holed: %q %v", got, err)
	}
	c2.Close()

	// Healed: what was dropped is gone, what is sent now comes back.
	p.Set(Pass, 0)
	if got, err := roundTrip(c, r, "two", 2*time.Second); err != nil || got != "two\n" {
		t.Fatalf("pass again: %q %v", got, err)
	}

	// Delay: each way waits, so a round trip takes at least twice it.
	p.Set(Delay, 150*time.Millisecond)
	start := time.Now()
	if got, err := roundTrip(c, r, "slow", 3*time.Second); err != nil || got != "slow\n" {
		t.Fatalf("delay: %q %v", got, err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("delayed round trip took %v, want at least 300ms", took)
	}

	// Reset: open connections get an RST, new ones too.
	p.Set(Reset, 0)
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := r.ReadByte(); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("reset: %v, want ECONNRESET", err)
	}
	c3, err := net.Dial("tcp", p.Addr())
	if err == nil {
		_ = c3.SetReadDeadline(time.Now().Add(2 * time.Second))
		_, err = c3.Read(make([]byte, 1))
		c3.Close()
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("new connection while resetting: %v, want ECONNRESET", err)
	}
}
