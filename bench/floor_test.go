package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/lua"
)

// The floor of a lookup (issue 26): a minimal net/http server doing one
// EVALSHA of lua/ratelimit.lua per request, with the keys and limits
// posedge's limiter uses for a scan, and a fixed item body. It runs as a
// process of its own (this test binary started again with floorEnv set),
// as posedge does, and is measured from outside like posedge's lookup:
// same client, same concurrency, in the same run. Whatever posedge does
// beyond that script (auth, the item, JSON, metrics, logs) is the gap.

// floorEnv carries the floor server's configuration (JSON floorConfig).
const floorEnv = "POSEDGE_BENCH_FLOOR"

type floorConfig struct {
	Sentinels []string          `json:"sentinels"`
	Master    string            `json:"master"`
	StoreID   string            `json:"store_id"`
	Keys      map[string]string `json:"keys"` // bearer key → terminal id
}

// runFloorServer serves until killed; it prints "floor <addr>" first.
func runFloorServer(conf string) int {
	var c floorConfig
	if err := json.Unmarshal([]byte(conf), &c); err != nil {
		fmt.Fprintln(os.Stderr, "floor config:", err)
		return 2
	}
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: c.Master, SentinelAddrs: c.Sentinels})
	script := lua.MustScript("ratelimit.lua")
	ctx := context.Background()
	if err := script.Load(ctx, rdb).Err(); err != nil {
		fmt.Fprintln(os.Stderr, "floor: load ratelimit.lua:", err)
		return 1
	}
	p := "pe:{" + c.StoreID + "}:"
	prefix := "floor." + strconv.FormatInt(time.Now().UnixNano(), 36) + "."
	var seq atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/items/{barcode}", func(w http.ResponseWriter, r *http.Request) {
		id, ok := c.Keys[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if !ok {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		keys := []string{p + "promo", p + "rl:s", p + "rl:t:" + id, p + "rl:a:" + id + ":scan"}
		res, err := script.EvalSha(r.Context(), rdb, keys, prefix+strconv.FormatInt(seq.Add(1), 10),
			100000, 1000, "", 100000, 1000, "", 100000, 1000, "scan").Slice()
		if err != nil || len(res) == 0 || res[0] != int64(1) {
			http.Error(w, `{"error":"limited"}`, http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"barcode":%q,"name":"item %s","price_cents":199,"stock":1000}`, r.PathValue("barcode"), r.PathValue("barcode"))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor: listen:", err)
		return 1
	}
	fmt.Printf("floor %s\n", ln.Addr())
	return exitCode(http.Serve(ln, mux))
}

func exitCode(err error) int {
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		return 1
	}
	return 0
}

// startFloor starts the floor server and returns its base URL.
func (h *harness) startFloor() string {
	keys := map[string]string{}
	for _, id := range h.store.Terminals {
		keys[h.store.Keys[id]] = id
	}
	conf, _ := json.Marshal(floorConfig{Sentinels: h.store.Redis.SentinelAddrs(), Master: testenv.MasterName, StoreID: h.store.StoreID, Keys: keys})
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), floorEnv+"="+string(conf))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("start the floor server: %v", err)
	}
	h.t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "floor ")
	if err != nil || !ok {
		h.t.Fatalf("floor server: %q %v", line, err)
	}
	return "http://" + addr
}

// measureFloor compares posedge's lookup with the floor server's, from
// the same client at the same concurrency, alternating, in each
// repetition.
func (h *harness) measureFloor() {
	base := h.startFloor()
	floor := func(i int) error {
		_, key := h.term(i)
		status, body, err := call(h.http, "GET", base+"/v1/items/BENCH1", key, nil, "")
		if err == nil && status != 200 {
			err = fmt.Errorf("floor lookup: %d %s", status, body)
		}
		return err
	}
	var ratios, floors, rates, loads, floorVsRaw []float64
	for rep := range h.sz.Reps {
		floorBefore := readProcCPU()
		fd, _, err := runConcurrent(h.sz.Lookups, floor)
		if err != nil {
			h.t.Fatal(err)
		}
		floorCPU, _ := perOpMicros(floorBefore, readProcCPU(), h.sz.Lookups)
		h.notef("floor server at %d callers: CPU per request by process (the floor is bench.test): %s", concurrency, floorCPU)
		// The floor itself against the bare script, same repetition: how
		// much of limiter_vs_raw_evalsha any HTTP server leaves on this
		// machine (the harness's client shares its CPUs).
		rd, _, err := runConcurrent(h.sz.Lookups, h.rawEvalSha(fmt.Sprintf("floorraw%d", rep)))
		if err != nil {
			h.t.Fatal(err)
		}
		d, _, err := runConcurrent(h.sz.Lookups, h.lookup)
		if err != nil {
			h.t.Fatal(err)
		}
		f, r := float64(h.sz.Lookups)/fd.Seconds(), float64(h.sz.Lookups)/d.Seconds()
		floors, rates, ratios, loads = append(floors, f), append(rates, r), append(ratios, r/f), append(loads, loadAvg())
		floorVsRaw = append(floorVsRaw, f/(float64(h.sz.Lookups)/rd.Seconds()))
	}
	h.add(figure{Name: "lookup_vs_http_evalsha_floor", Value: median(ratios), Goal: ">= 0.8", Reps: ratios, Loads: loads,
		Detail: fmt.Sprintf("GET /v1/items/{barcode} through posedge ÷ the same request to a minimal net/http server (its own process) doing one EVALSHA of ratelimit.lua with posedge's keys and limits, from the harness's HTTP client, %d callers, %d requests each side, alternating", concurrency, h.sz.Lookups)})
	h.add(figure{Name: "http_evalsha_floor_per_s", Value: median(floors), Reps: floors, Loads: loads, Detail: "requests/s of that floor server"})
	h.add(figure{Name: "http_evalsha_floor_vs_raw_evalsha", Value: median(floorVsRaw), Reps: floorVsRaw, Loads: loads,
		Detail: "that floor server ÷ raw EVALSHA of ratelimit.lua from the harness, same repetitions: the most any HTTP lookup can score in limiter_vs_raw_evalsha on this machine"})
	h.add(figure{Name: "lookup_per_s_beside_floor", Value: median(rates), Reps: rates, Loads: loads, Detail: "lookups/s through posedge in the same repetitions"})
}
