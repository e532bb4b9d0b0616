package testenv

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Fault is what a FaultProxy does to the bytes it carries.
type Fault int

// The faults of a link.
const (
	// Pass forwards every byte both ways.
	Pass Fault = iota
	// BlackHole reads and drops every byte, both ways, and never closes a
	// connection: a hung peer or a WAN that loses everything while TCP
	// stays up (what a SIGSTOPped server looks like from outside). New
	// connections are accepted and go nowhere.
	BlackHole
	// Delay forwards every chunk after a pause (a slow link).
	Delay
	// Reset closes every connection with a TCP RST, and new ones at once.
	Reset
	// DropAnswers is one-way: what the client sends reaches the server,
	// every byte the server sends back is dropped (TCP stays up). The
	// request is carried out and its answer lost: a Redis script that
	// ran, a JetStream publish stored without its PubAck reaching the
	// client. Dropping stops on a chunk boundary, so a stream healed
	// afterwards may resume mid-reply: a test heals through Reset.
	DropAnswers
	// DelayAnswers is one-way: requests pass at once, every chunk of an
	// answer waits the delay (a slow return path).
	DelayAnswers
)

func (f Fault) String() string {
	return [...]string{"pass", "black hole", "delay", "reset", "drop answers", "delay answers"}[f]
}

// FaultProxy is a TCP proxy on loopback between a client and a server
// whose link can be made to misbehave at any moment (Set). Clients are
// pointed at Addr instead of the server.
type FaultProxy struct {
	t      testing.TB
	ln     net.Listener
	target string

	// Bytes carried to the server and answer bytes dropped, while
	// DropAnswers was in force: a test proves the window was hit.
	sentWhileDropping, answersDropped atomic.Int64

	mu    sync.Mutex
	fault Fault
	delay time.Duration
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// StartFaultProxy listens on a free loopback port and forwards to target;
// it starts in Pass and stops with the test.
func StartFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fault proxy: %v", err)
	}
	p := &FaultProxy{t: t, ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(p.Close)
	p.wg.Add(1)
	go p.accept()
	return p
}

// Addr is the proxy's host:port.
func (p *FaultProxy) Addr() string { return p.ln.Addr().String() }

// Set changes the fault from now on, for open connections too; delay is
// used by Delay only.
func (p *FaultProxy) Set(f Fault, delay time.Duration) {
	p.mu.Lock()
	p.fault, p.delay = f, delay
	var reset []net.Conn
	if f == Reset {
		for c := range p.conns {
			reset = append(reset, c)
		}
	}
	p.mu.Unlock()
	for _, c := range reset {
		rst(c)
	}
	p.t.Logf("fault proxy %s → %s: %s", p.Addr(), p.target, f)
}

func (p *FaultProxy) now() (Fault, time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fault, p.delay
}

// AnswersLost reports, for the time DropAnswers was in force, how many
// bytes of requests reached the server and how many bytes of answers
// were dropped: both above zero means a request was carried out and its
// answer lost.
func (p *FaultProxy) AnswersLost() (sent, dropped int64) {
	return p.sentWhileDropping.Load(), p.answersDropped.Load()
}

// Close stops the proxy and closes every connection.
func (p *FaultProxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *FaultProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fault == Reset {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *FaultProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

func (p *FaultProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(client) {
			rst(client)
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(client)
		}()
	}
}

// serve carries one connection. The server is dialled only when the link
// passes bytes: a black-holed client never reaches it.
func (p *FaultProxy) serve(client net.Conn) {
	defer p.untrack(client)
	var server net.Conn
	for server == nil {
		if f, _ := p.now(); f != BlackHole {
			s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
			if err != nil {
				rst(client)
				return
			}
			server = s
			break
		}
		// Black hole before the server was reached: swallow what the
		// client sends until the fault changes or the client goes.
		_ = client.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := client.Read(make([]byte, 32<<10)); err != nil && !isTimeout(err) {
			return
		}
		_ = client.SetReadDeadline(time.Time{})
	}
	if !p.track(server) {
		rst(server)
		rst(client)
		return
	}
	defer p.untrack(server)
	done := make(chan struct{}, 2)
	go func() { p.pump(server, client, false); done <- struct{}{} }()
	go func() { p.pump(client, server, true); done <- struct{}{} }()
	<-done
	// One side ended: end both, as the peer of a proxy would see it.
	_ = client.Close()
	_ = server.Close()
	<-done
}

// pump copies src to dst chunk by chunk, applying the fault in force
// when each chunk arrives; answer is the server-to-client direction.
func (p *FaultProxy) pump(dst, src net.Conn, answer bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			f, d := p.now()
			switch {
			case f == DropAnswers && answer:
				p.answersDropped.Add(int64(n))
				f = BlackHole
			case f == DropAnswers:
				p.sentWhileDropping.Add(int64(n))
				f = Pass
			case f == DelayAnswers && answer:
				f = Delay
			case f == DelayAnswers:
				f = Pass
			}
			switch f {
			case BlackHole:
				// dropped
			case Reset:
				return
			case Delay:
				time.Sleep(d)
				fallthrough
			default:
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// rst closes c with a TCP RST instead of a FIN.
func rst(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
