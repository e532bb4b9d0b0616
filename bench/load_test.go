package bench

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// measureSimLoad runs posedge-sim against the daemon with every terminal
// (scans, sales, replays with the same key, over real HTTP); its summary
// goes to the notes, and the RSS sampler sees the load.
func (h *harness) measureSimLoad() {
	var keys []string
	for _, id := range h.store.Terminals {
		keys = append(keys, id+"="+h.store.Keys[id])
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.sz.SimDuration+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "posedge-sim"), "--url", h.store.EdgeURL, "--admin", h.store.AdminURL,
		"--keys", strings.Join(keys, ","), "--seed-items", "20", "--duration", h.sz.SimDuration.String(),
		"--rate", strconv.FormatFloat(h.sz.SimRate, 'f', -1, 64),
		"--scans", "5-10", "--tokens", fmt.Sprint(h.sz.SimMix[0]), "--refunds", fmt.Sprint(h.sz.SimMix[1]),
		"--replay", fmt.Sprint(h.sz.SimMix[2]),
		"--batch-every", (h.sz.SimDuration / 4).String(), "--batch-size", "20")
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("posedge-sim: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		h.notef("sim | %s", line)
	}
	count := func(what string) int {
		m := regexp.MustCompile(`(?m)^\s*` + what + `\s+(\d+)`).FindSubmatch(out)
		if m == nil {
			h.t.Fatalf("posedge-sim printed no %q count:\n%s", what, out)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	// The load is what it claims to be: every kind of request answered,
	// none given up.
	for _, what := range []string{"sales ok", "scans", "token sales", "refunds", "batch sales", "replays"} {
		if count(what) == 0 {
			h.t.Errorf("posedge-sim: no %s under the load:\n%s", what, out)
		}
	}
	// A request given up after its retries timed out says the box was
	// overloaded; any other error is posedge answering wrong.
	if n, timeouts := count("errors"), countTimeouts(out); n > timeouts {
		h.t.Errorf("posedge-sim: %d requests given up, %d of them on timeouts:\n%s", n, timeouts, out)
	}
	p99 := func(route string) float64 {
		m := regexp.MustCompile(`latency ` + regexp.QuoteMeta(route) + ` .* p99=([0-9.]+)ms`).FindSubmatch(out)
		if m == nil {
			h.t.Fatalf("posedge-sim printed no latency of %s:\n%s", route, out)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	load := fmt.Sprintf("posedge-sim, %d terminals at %.1f sales/s each for %s, scan bursts of 5-10, %.0f%% token-keyed, %.0f%% refunded, %.0f%% sent twice, a batch of 20 every %s",
		len(h.store.Terminals), h.sz.SimRate, h.sz.SimDuration, 100*h.sz.SimMix[0], 100*h.sz.SimMix[1], 100*h.sz.SimMix[2], h.sz.SimDuration/4)
	h.add(figure{Name: "sim_sales_per_s", Value: float64(count("sales ok")) / h.sz.SimDuration.Seconds(),
		Detail: load + " (the load of rss_load_mb)"})
	h.add(figure{Name: "sim_sale_p99_ms", Value: p99("POST /v1/sales"), Detail: "p99 of POST /v1/sales under that load"})
	h.add(figure{Name: "sim_lookup_p99_ms", Value: p99("GET /v1/items/{barcode}"), Detail: "p99 of GET /v1/items/{barcode} under that load"})
}

// countTimeouts sums the simulator's "gave_up:timeout" and
// "gave_up:network" error lines.
func countTimeouts(out []byte) int {
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^\s*gave_up:(?:timeout|network)\s+(\d+)`).FindAllSubmatch(out, -1) {
		v, _ := strconv.Atoi(string(m[1]))
		n += v
	}
	return n
}
