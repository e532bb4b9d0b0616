package bench

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/posedge/posedge/internal/testenv/load"
)

// The no-sale windows of issue 21: how long the tills are told no sale
// after a daemon restart with Redis hung, and after the Redis master dies
// under load.

// restartTry is how often the restart measurement tries its sale.
const restartTry = 10 * time.Millisecond

// measureRestart kills posedge, freezes every Redis node (SIGSTOP),
// starts posedge again and times process start → first 201. Redis is
// thawed after and the daemon waited for until ready again.
func (h *harness) measureRestart() {
	s := h.store
	c := &http.Client{Timeout: 5 * time.Second}
	var took []float64
	for rep := range h.sz.Reps {
		s.Edge.Kill()
		s.Redis.StopAll()
		start := time.Now()
		s.Edge.Start(h.t)
		key := fmt.Sprintf("restart-%d-%d", time.Now().UnixNano()%1e9, rep)
		_, auth := h.term(rep)
		var first time.Duration
		for time.Since(start) < 30*time.Second {
			// One key, retried as a till retries.
			if status, _, err := call(c, "POST", s.EdgeURL+"/v1/sales", auth, saleBody, key); err == nil && status == 201 {
				first = time.Since(start)
				break
			}
			time.Sleep(restartTry)
		}
		s.Redis.ContAll()
		if first == 0 {
			h.t.Fatalf("restart with redis hung: no 201 within 30 s")
		}
		took = append(took, ms(first))
		h.sales++
		h.waitReady(60 * time.Second)
	}
	h.add(figure{Name: "restart_to_first_sale_ms", Value: median(took), Goal: "< 2000", Reps: took,
		Detail: fmt.Sprintf("posedge SIGKILLed, every Redis node SIGSTOPped, posedge started: process start → first 201 (a try every %v), median of %d", restartTry, len(took))})
}

// failoverTills sell during the failover measurement.
const failoverTills = 8

// measureFailover runs failoverTills tills selling as fast as they are
// answered, SIGKILLs the Redis master, and reports the longest time no
// till was told a sale from the kill until the daemon is back in normal
// mode on the new master (and 2 s more).
func (h *harness) measureFailover() {
	s := h.store
	c := &http.Client{Timeout: 10 * time.Second, Transport: newHTTPClient().Transport}
	var (
		mu   sync.Mutex
		oks  []time.Time
		stop = make(chan struct{})
		wg   sync.WaitGroup
	)
	prefix := fmt.Sprintf("failover-%d-", time.Now().UnixNano()%1e9)
	for ti := range failoverTills {
		wg.Go(func() {
			_, auth := h.term(ti)
			for i := 0; ; i++ {
				key := fmt.Sprintf("%s%d-%d", prefix, ti, i)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if status, _, err := call(c, "POST", s.EdgeURL+"/v1/sales", auth, saleBody, key); err == nil && status == 201 {
						mu.Lock()
						oks = append(oks, time.Now())
						h.sales++
						mu.Unlock()
						break
					}
					time.Sleep(5 * time.Millisecond) // the same key again
				}
			}
		})
	}
	time.Sleep(2 * time.Second)
	master := s.Redis.MasterIndex()
	killed := time.Now()
	s.Redis.KillNode(master)
	// Wait for a new master to be promoted and the daemon to be ready on
	// it, then sell 2 s more.
	h.waitReadyAfter(killed, 60*time.Second)
	time.Sleep(2 * time.Second)
	ended := time.Now()
	close(stop)
	wg.Wait()
	s.Redis.RestartNode(master) // back as a replica of the new master

	mu.Lock()
	defer mu.Unlock()
	longest, at := load.LongestGap(oks, killed, ended)
	h.add(figure{Name: "failover_no_sale_ms", Value: ms(longest), Goal: "< 3000",
		Detail: fmt.Sprintf("%d tills selling, Redis master SIGKILLed: longest gap between two 201s (from the kill) until back in normal mode on the new master + 2 s; it began %v after the kill",
			failoverTills, at.Sub(killed).Round(time.Millisecond))})
}

// waitReady waits for posedge's /readyz to answer 200 (normal mode).
func (h *harness) waitReady(d time.Duration) {
	h.waitReadyAfter(time.Time{}, d)
}

// waitReadyAfter waits for /readyz to have failed at least once since
// from (the daemon saw the fault) and then to answer 200.
func (h *harness) waitReadyAfter(from time.Time, d time.Duration) {
	deadline := time.Now().Add(d)
	seenDown := from.IsZero()
	for time.Now().Before(deadline) {
		status, _, err := call(h.http, "GET", h.store.AdminURL+"/readyz", "", nil, "")
		switch {
		case err != nil || status != 200:
			seenDown = true
		case seenDown:
			return
		case time.Since(from) > 15*time.Second:
			return // never seen down: the daemon did not notice
		}
		time.Sleep(50 * time.Millisecond)
	}
	var lines []string
	for _, l := range strings.Split(h.store.Edge.Tail(1<<20), "\n") {
		if !strings.Contains(l, "component=replay") && !strings.Contains(l, "catalog") {
			lines = append(lines, l)
		}
	}
	h.t.Fatalf("posedge not ready within %v:\n%s", d, strings.Join(lines[max(0, len(lines)-40):], "\n"))
}
