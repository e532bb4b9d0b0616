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
		"--rate", strconv.FormatFloat(h.sz.SimRate, 'f', -1, 64))
	out, err := cmd.CombinedOutput()
	if err != nil {
		h.t.Fatalf("posedge-sim: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		h.notef("sim | %s", line)
	}
	m := regexp.MustCompile(`sales ok\s+(\d+)`).FindSubmatch(out)
	if m == nil {
		h.t.Fatalf("posedge-sim printed no sales count:\n%s", out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	h.add(figure{Name: "sim_sales_per_s", Value: float64(n) / h.sz.SimDuration.Seconds(),
		Detail: fmt.Sprintf("posedge-sim, %d terminals at %.1f sales/s each for %s (the load of rss_load_mb)",
			len(h.store.Terminals), h.sz.SimRate, h.sz.SimDuration)})
}
