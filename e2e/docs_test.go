package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/posedge/posedge/internal/apispec"
	"github.com/posedge/posedge/internal/testenv"
)

// guide is the till developer's guide whose examples must run as written.
const guide = "../docs/tills.md"

// The guide's shell examples, in order, run against a real store: the
// demo's addresses are replaced by the store's (through checking proxies), its key file is made
// in the demo's format, and every curl fails on a 4xx or 5xx.
func TestTerminalGuideExamplesRun(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is not installed (.ci/run installs it): the guide's examples are curl commands and must run")
	}
	b, err := os.ReadFile(guide)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(b), -1)
	if len(blocks) < 8 {
		t.Fatalf("%s: %d sh blocks, want the setup and every endpoint", guide, len(blocks))
	}
	s := startStore(t, testenv.StoreOptions{})
	for i := 1; i <= 20; i++ {
		bc := fmt.Sprintf("2000000%06d", i)
		if r := s.Admin("PUT", "/admin/v1/items/"+bc, map[string]any{"name": fmt.Sprintf("Demo item %d", i),
			"price_cents": 99 + (i*337)%1900, "stock": 1_000_000}); r.Status != 200 {
			t.Fatalf("seed %s: %d %s", bc, r.Status, r.Body)
		}
	}
	dir := t.TempDir()
	var keys []string
	for _, id := range s.Terminals {
		keys = append(keys, id+"="+s.Keys[id])
	}
	if err := os.MkdirAll(filepath.Join(dir, ".demo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".demo", "keys"), []byte(strings.Join(keys, ",")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	script := "set -euo pipefail\n"
	for _, bl := range blocks {
		script += bl[1] + "\n"
	}
	// curl talks to the store through proxies that check every exchange
	// against docs/openapi.yaml, as the Store's own helpers do.
	script = strings.NewReplacer("http://127.0.0.1:18080", s.CheckingURL(apispec.Terminal), "http://127.0.0.1:18081", s.CheckingURL(apispec.Admin),
		"curl -s ", "curl -s --fail-with-body ").Replace(script)
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the guide's examples failed: %v\n%s\n--- script:\n%s", err, out, script)
	}
	// The retry loop's sale, then the same key and body from the offline
	// queue: one sale, the same flow number twice.
	again := regexp.MustCompile(`"flow_no":"([0-9]+)","store_id":"[^"]*","terminal_id":"T01","kind":"sale","total_cents":1110,"tender":"card"`).
		FindAllStringSubmatch(string(out), -1)
	if len(again) != 2 || again[0][1] != again[1][1] {
		t.Errorf("the retried sale and its queued upload: %q, want one flow number twice", again)
	}
	for _, want := range []string{
		`"barcode":"2000000000001","name":"Demo item 1","price_cents":436`, // item lookup
		`{"barcode":"2000000000006","qty":1,"price_cents":200}`,            // the till's price, not the master's 221
		`"kind":"refund","total_cents":436`,                                // refund at the original price
		`"token":"pt_`,                                                     // payment token
		`{"results":[{"status":201,`,                                       // batch: the first sale recorded
		`{"status":400,"error":{"code":"total_mismatch"`,                   // batch: the second refused alone
		`"name":"Ballpoint pen","price_cents":129,"stock":40`,              // admin item
		`"total_cents":1110,"tender":"card"`,                               // the retry loop's sale
		`Ratelimit: "scan";r=`,                                             // the headers, as a till reads them
		`Ratelimit-Policy: "scan";q=`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the examples' output lacks %s:\n%s", want, out)
		}
	}
}
