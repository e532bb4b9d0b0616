package bench

import (
	"bufio"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/posedge/posedge/lua"
)

// The trace of a sale (issue 26): where one durable sale's time goes, seen
// from outside posedge. Redis MONITOR on the master stamps every command
// as Redis runs it (the same clock as the harness's, one host), and each
// sale is found in it by its terminal and Idempotency-Key: the limiter's
// script, the sale script, the WAIT pipelined after it on the same
// connection, the completion script; the harness stamps the request sent
// and the 201 read. Between the WAIT and the 201 lie the WAIT itself, the
// journal queue and its commit: posedge_journal_commit_seconds splits the
// commit out, and a raw SET + WAIT 1 from the harness measures a WAIT.

// monitorLine is "<unix s.µs> [<db> <client>] "<cmd>" "<arg>" …".
var (
	monitorLine = regexp.MustCompile(`^\+?(\d+\.\d+) \[\d+ ([^\]]+)\] (.*)$`)
	monitorArg  = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
)

type monitored struct {
	at     time.Time
	client string
	cmd    string
	args   string // every argument, space-joined
}

// monitor records the master's commands until stop is called.
func (h *harness) monitor() (stop func() []monitored) {
	idx := h.store.Redis.MasterIndex()
	c, err := net.Dial("tcp", h.store.Redis.NodeAddr(idx))
	if err != nil {
		h.t.Fatalf("MONITOR: %v", err)
	}
	if _, err := c.Write([]byte("MONITOR\r\n")); err != nil {
		h.t.Fatalf("MONITOR: %v", err)
	}
	rd := bufio.NewReaderSize(c, 1<<20)
	if line, err := rd.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
		h.t.Fatalf("MONITOR: %q %v", line, err)
	}
	var (
		mu  sync.Mutex
		out []monitored
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			m := monitorLine.FindStringSubmatch(strings.TrimSpace(line))
			if m == nil || m[2] == "lua" {
				continue
			}
			args := monitorArg.FindAllStringSubmatch(m[3], -1)
			if len(args) == 0 {
				continue
			}
			sec, _ := strconv.ParseFloat(m[1], 64)
			r := monitored{at: time.UnixMicro(int64(sec * 1e6)), client: m[2], cmd: strings.ToLower(args[0][1])}
			var rest []string
			for _, a := range args[1:] {
				rest = append(rest, a[1])
			}
			r.args = strings.Join(rest, " ")
			mu.Lock()
			out = append(out, r)
			mu.Unlock()
		}
	}()
	return func() []monitored {
		time.Sleep(200 * time.Millisecond) // the last completions
		c.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return out
	}
}

// traced is one sale as the harness sent it.
type traced struct {
	term, key  string
	sent, recv time.Time
}

// saleSteps are one sale's steps, in ms from the request sent.
type saleSteps struct {
	limiter, script, wait, answer, completion float64
}

// steps finds each traced sale's commands in the monitor's record; a
// sale not found whole is left out.
func steps(rec []monitored, sales []traced) []saleSteps {
	rl, txn, done := lua.MustScript("ratelimit.lua").Hash(), lua.MustScript("txn.lua").Hash(), lua.MustScript("txn_complete.lua").Hash()
	ms := func(a, b time.Time) float64 { return float64(b.Sub(a).Microseconds()) / 1000 }
	var out []saleSteps
	for _, s := range sales {
		idem := ":idem:" + s.term + ":" + s.key + " "
		var st saleSteps
		var lim, scr, wt, cmp time.Time
		var scrClient string
		for i, r := range rec {
			if r.at.Before(s.sent.Add(-time.Millisecond)) {
				continue
			}
			switch {
			case r.cmd == "evalsha" && strings.HasPrefix(r.args, rl) && strings.Contains(r.args, ":rl:t:"+s.term+" ") && lim.IsZero() && r.at.Before(s.recv):
				lim = r.at
			case r.cmd == "evalsha" && strings.HasPrefix(r.args, txn) && strings.Contains(r.args+" ", idem) && scr.IsZero():
				scr, scrClient = r.at, r.client
				for _, w := range rec[i+1:] {
					if w.client == scrClient && w.cmd == "wait" {
						wt = w.at
						break
					}
				}
			// The completion: txn_complete.lua on its own, or a mark riding
			// in a later sale's txn.lua (its KEYS after the items).
			case r.cmd == "evalsha" && (strings.HasPrefix(r.args, done) || strings.HasPrefix(r.args, txn) && !scr.IsZero()) &&
				strings.Contains(r.args+" ", idem) && cmp.IsZero():
				cmp = r.at
			}
		}
		if lim.IsZero() || scr.IsZero() || wt.IsZero() || cmp.IsZero() {
			continue
		}
		st.limiter, st.script, st.wait = ms(s.sent, lim), ms(s.sent, scr), ms(s.sent, wt)
		st.answer, st.completion = ms(s.sent, s.recv), ms(s.sent, cmp)
		out = append(out, st)
	}
	return out
}

// traceSales makes n durable sales at the given concurrency under
// MONITOR and returns the steps found, the daemon's mean journal commit
// over them (ms) and the raw WAIT the harness timed just after.
func (h *harness) traceSales(n, callers int) ([]saleSteps, float64, float64) {
	prefix := h.keyPrefix("trace")
	sales := make([]traced, n)
	stop := h.monitor()
	before := h.metrics()
	sem := make(chan struct{}, callers)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			id, auth := h.term(i)
			key := prefix + strconv.Itoa(i)
			sales[i] = traced{term: id, key: key, sent: time.Now()}
			status, body, err := call(h.http, "POST", h.store.EdgeURL+"/v1/sales", auth, saleBody, key)
			sales[i].recv = time.Now()
			if err == nil && status != 201 {
				err = fmt.Errorf("traced sale: %d %s", status, body)
			}
			if err != nil {
				h.t.Error(err)
			}
		})
	}
	wg.Wait()
	after := h.metrics()
	rec := stop()
	h.sales += n
	commit := 0.0
	if c := after["posedge_journal_commit_seconds_count"] - before["posedge_journal_commit_seconds_count"]; c > 0 {
		commit = 1000 * (after["posedge_journal_commit_seconds_sum"] - before["posedge_journal_commit_seconds_sum"]) / c
	}
	return steps(rec, sales), commit, h.rawWaitMs(20)
}

// rawWaitMs is the mean of n SET + WAIT 1 pipelines on the master.
func (h *harness) rawWaitMs(n int) float64 {
	m := h.store.Redis.NodeClient(h.store.Redis.MasterIndex())
	t0 := time.Now()
	for i := range n {
		pipe := m.Pipeline()
		pipe.Set(h.t.Context(), "bench:wait", i, 0)
		pipe.Do(h.t.Context(), "WAIT", 1, 1000)
		if _, err := pipe.Exec(h.t.Context()); err != nil {
			h.t.Fatalf("raw WAIT: %v", err)
		}
	}
	return ms(time.Since(t0)) / float64(n)
}

// measureSaleTrace traces sales one at a time (figures) and at
// concurrency (a note per repetition).
func (h *harness) measureSaleTrace() {
	type col struct {
		name, detail string
		v            []float64
	}
	cols := []*col{
		{name: "sale_trace_to_limiter_ms", detail: "request sent → the limiter's script at Redis (HTTP, auth)"},
		{name: "sale_trace_limiter_to_script_ms", detail: "limiter script → the sale script at Redis (limiter answer, validation, journal look-up of the key)"},
		{name: "sale_trace_script_to_wait_ms", detail: "sale script → its WAIT at Redis (the script runs; the WAIT is pipelined behind it)"},
		{name: "sale_trace_wait_to_answer_ms", detail: "WAIT at Redis → 201 read by the caller (the WAIT, journal queue and commit, the answer)"},
		{name: "sale_trace_answer_to_completion_ms", detail: "201 read → the completion script at Redis (off the answer's path: below 0 when it ran before the caller had read the 201)"},
		{name: "sale_trace_journal_commit_ms", detail: "mean posedge_journal_commit_seconds over the traced sales"},
		{name: "sale_trace_raw_wait_ms", detail: "a raw SET + WAIT 1 pipeline from the harness just after, mean of 20"},
		{name: "sale_trace_total_ms", detail: "request sent → 201 read"},
	}
	var loads []float64
	for rep := range h.sz.Reps {
		st, commit, wait := h.traceSales(h.sz.TraceSales, 1)
		if len(st) == 0 {
			h.t.Fatalf("sale trace: no sale found whole in MONITOR's record (commands renamed? update bench/trace_test.go)")
		}
		med := func(f func(s saleSteps) float64) float64 {
			v := make([]float64, len(st))
			for i, s := range st {
				v[i] = f(s)
			}
			return median(v)
		}
		vals := []float64{med(func(s saleSteps) float64 { return s.limiter }),
			med(func(s saleSteps) float64 { return s.script - s.limiter }),
			med(func(s saleSteps) float64 { return s.wait - s.script }),
			med(func(s saleSteps) float64 { return s.answer - s.wait }),
			med(func(s saleSteps) float64 { return s.completion - s.answer }),
			commit, wait,
			med(func(s saleSteps) float64 { return s.answer })}
		for i, c := range cols {
			c.v = append(c.v, vals[i])
		}
		loads = append(loads, loadAvg())
		if len(st) < h.sz.TraceSales {
			h.notef("sale trace rep %d: %d of %d sales found whole in MONITOR", rep+1, len(st), h.sz.TraceSales)
		}
		if !h.sz.TraceConcurrent {
			continue
		}
		cst, ccommit, cwait := h.traceSales(4*concurrency, concurrency)
		if len(cst) > 0 {
			var l, s, w, a, c []float64
			for _, x := range cst {
				l, s, w = append(l, x.limiter), append(s, x.script-x.limiter), append(w, x.wait-x.script)
				a, c = append(a, x.answer-x.wait), append(c, x.completion-x.answer)
			}
			h.notef("sale trace at %d callers, rep %d (%d sales found), medians ms: to limiter %.2f, limiter→script %.2f, script→WAIT %.2f, WAIT→201 %.2f (journal commit mean %.2f, raw WAIT %.2f), 201→completion %.2f",
				concurrency, rep+1, len(cst), median(l), median(s), median(w), median(a), ccommit, cwait, median(c))
		}
	}
	for _, c := range cols {
		h.add(figure{Name: c.name, Value: median(c.v), Reps: slices.Clone(c.v), Loads: loads,
			Detail: fmt.Sprintf("%s; %d sales one at a time under MONITOR, median per repetition", c.detail, h.sz.TraceSales)})
	}
}
