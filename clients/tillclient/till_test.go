package tillclient_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/clients/hqclient"
	"github.com/posedge/posedge/clients/tillclient"
	"github.com/posedge/posedge/internal/apispec"
	"github.com/posedge/posedge/internal/testenv"
)

// bin holds the posedge and posedge-hq binaries built once for this run;
// api checks every exchange of the run against the descriptions.
var (
	bin string
	api *testenv.APICheck
)

func TestMain(m *testing.M) {
	testenv.MainWithBinaries(m, "clients", func(dir string, check *testenv.APICheck) { bin, api = dir, check })
}

const barcode = "2000000000001"

// newTill is the generated client as terminal id of s would hold it, its
// every exchange checked against docs/openapi.yaml.
func newTill(t *testing.T, s *testenv.Store, id string) *tillclient.ClientWithResponses {
	t.Helper()
	key := s.Keys[id]
	c, err := tillclient.NewClientWithResponses(s.EdgeURL,
		tillclient.WithHTTPClient(api.Client(t, apispec.Terminal)),
		tillclient.WithRequestEditorFn(func(_ context.Context, r *http.Request) error {
			r.Header.Set("Authorization", "Bearer "+key)
			return nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stock is the item's stock as the terminal API answers it.
func stock(t *testing.T, c *tillclient.ClientWithResponses) int64 {
	t.Helper()
	r, err := c.GetItemWithResponse(context.Background(), barcode)
	if err != nil || r.JSON200 == nil {
		t.Fatalf("lookup %s: %v %s", barcode, err, bodyOf(r))
	}
	return r.JSON200.Stock
}

// bodyOf is a generated response (nil or not) for a failure message:
// they all carry HTTPResponse and Body.
func bodyOf(r any) string {
	v := reflect.ValueOf(r)
	if !v.IsValid() || v.IsNil() {
		return "(no answer)"
	}
	e := v.Elem()
	status := "no status"
	if res, ok := e.FieldByName("HTTPResponse").Interface().(*http.Response); ok && res != nil {
		status = res.Status
	}
	return fmt.Sprintf("%s %s", status, e.FieldByName("Body").Bytes())
}

// A till developer's Go client, generated from docs/openapi.yaml: a
// lookup, a sale, its replay (the same Idempotency-Key answers the same
// sale, marked replayed, and sells nothing twice) and a refund against a
// real daemon; then posedge-hq's generated client finds the store. The
// oracle is the daemon's stock and its stored copy, not the answers
// themselves.
func TestGeneratedGoClientSellsReplaysAndRefunds(t *testing.T) {
	s := testenv.StartStore(t, testenv.StoreOptions{Bin: bin, API: api, Terminals: 2})
	s.PutItem(barcode, 436, 10)
	ctx := context.Background()
	c := newTill(t, s, s.Terminals[0])

	item, err := c.GetItemWithResponse(ctx, barcode)
	if err != nil || item.JSON200 == nil {
		t.Fatalf("lookup: %v %s", err, bodyOf(item))
	}
	if item.JSON200.PriceCents != 436 || item.JSON200.Stock != 10 || item.JSON200.Barcode != barcode {
		t.Fatalf("lookup: %+v, want %s at 436 with 10 in stock", *item.JSON200, barcode)
	}

	receipt := "R-go-1"
	body := tillclient.SaleRequest{
		Lines:      tillclient.SaleLines{{Barcode: barcode, Qty: 2, PriceCents: 436}},
		TotalCents: 872, Tender: tillclient.TenderCash, ReceiptNo: &receipt,
	}
	params := &tillclient.CreateSaleParams{IdempotencyKey: "T01-go-sale-1"}
	first, err := c.CreateSaleWithResponse(ctx, params, body)
	if err != nil || first.JSON201 == nil {
		t.Fatalf("sale: %v %s", err, bodyOf(first))
	}
	sale := first.JSON201
	if sale.Kind != tillclient.SaleKindSale || sale.TotalCents != 872 || sale.ReceiptNo == nil || *sale.ReceiptNo != receipt {
		t.Fatalf("sale: %s", first.Body)
	}
	if got := first.HTTPResponse.Header.Get("Idempotent-Replayed"); got != "" {
		t.Errorf("first sale: Idempotent-Replayed %q, want none", got)
	}
	if n := stock(t, c); n != 8 {
		t.Fatalf("stock after selling 2 of 10: %d", n)
	}

	again, err := c.CreateSaleWithResponse(ctx, params, body)
	if err != nil || again.JSON201 == nil {
		t.Fatalf("replay: %v %s", err, bodyOf(again))
	}
	if got := again.HTTPResponse.Header.Get("Idempotent-Replayed"); got != "true" {
		t.Errorf("replay: Idempotent-Replayed %q, want true", got)
	}
	if !bytes.Equal(again.Body, first.Body) {
		t.Errorf("replay answered\n%s\nnot the first answer\n%s", again.Body, first.Body)
	}
	if n := stock(t, c); n != 8 {
		t.Fatalf("stock after the replay: %d, want 8 (a replay sells nothing)", n)
	}

	// Another terminal refunds one of the two.
	other := newTill(t, s, s.Terminals[1])
	ref, err := other.CreateRefundWithResponse(ctx, &tillclient.CreateRefundParams{IdempotencyKey: "T02-go-refund-1"},
		tillclient.RefundRequest{OriginalFlowNo: sale.FlowNo, Lines: []tillclient.RefundLine{{Barcode: barcode, Qty: 1}}, TotalCents: 436})
	if err != nil || ref.JSON201 == nil {
		t.Fatalf("refund: %v %s", err, bodyOf(ref))
	}
	if r := ref.JSON201; r.Kind != tillclient.SaleKindRefund || r.OriginalFlowNo == nil || *r.OriginalFlowNo != sale.FlowNo ||
		r.TotalCents != 436 || r.TerminalId != s.Terminals[1] || r.Tender != tillclient.TenderCash {
		t.Fatalf("refund: %s", ref.Body)
	}
	if n := stock(t, c); n != 9 {
		t.Fatalf("stock after refunding 1: %d, want 9", n)
	}
	stored, err := c.GetSaleWithResponse(ctx, sale.FlowNo)
	if err != nil || stored.JSON200 == nil || !bytes.Equal(bytes.TrimSpace(stored.Body), bytes.TrimSpace(first.Body)) {
		t.Fatalf("stored sale %s: %v %s, want %s", sale.FlowNo, err, bodyOf(stored), first.Body)
	}

	// posedge-hq's admin API through its generated client: the store is
	// listed with both transactions once they have been shipped.
	hq, err := hqclient.NewClientWithResponses("http://"+s.HQAdmin, hqclient.WithHTTPClient(api.Client(t, apispec.HQ)))
	if err != nil {
		t.Fatal(err)
	}
	var got *hqclient.StoreEntry
	testenv.WaitFor(t, 20*time.Second, "posedge-hq to list the store with 2 transactions", func() bool {
		r, err := hq.GetStoreWithResponse(ctx, s.StoreID)
		if err != nil || r.JSON200 == nil {
			return false
		}
		got = r.JSON200
		return got.Transactions == 2
	})
	if got.StoreId != s.StoreID {
		t.Errorf("posedge-hq: store %q, want %q", got.StoreId, s.StoreID)
	}
}

// The TypeScript till (clients/ts/tillcheck.ts, typed by openapi-typescript
// from docs/openapi.yaml, compiled by tsc) runs the same exchanges under
// node, through a proxy that checks each against docs/openapi.yaml. Skipped
// without node, except on CI (CI=true), where scripts/test-deps.sh has
// installed it.
func TestTypeScriptTillSellsReplaysAndRefunds(t *testing.T) {
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = exec.LookPath("npm")
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node and npm are needed on CI (scripts/test-deps.sh installs them): %v", err)
		}
		t.Skipf("no node/npm: %v", err)
	}
	build := exec.Command("bash", "../../scripts/clients-ts.sh")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("scripts/clients-ts.sh: %v\n%s", err, out)
	}

	s := testenv.StartStore(t, testenv.StoreOptions{Bin: bin, API: api, Terminals: 1, NoHQ: true})
	s.PutItem(barcode, 773, 5)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("..", "ts", "dist", "tillcheck.js"))
	cmd.Env = append(os.Environ(),
		"POSEDGE_URL="+s.CheckingURL(apispec.Terminal),
		"POSEDGE_TERMINAL_KEY="+s.Keys[s.Terminals[0]],
		"POSEDGE_BARCODE="+barcode,
		"POSEDGE_KEY_PREFIX=T01-ts-1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node tillcheck.js: %v\n%s", err, stderr.String())
	}
	var seen struct {
		Sale   tillclient.Sale `json:"sale"`
		Refund tillclient.Sale `json:"refund"`
	}
	if err := json.Unmarshal(out, &seen); err != nil {
		t.Fatalf("tillcheck.js printed %q: %v", out, err)
	}

	// What the daemon holds, read with the Go client, is what the
	// TypeScript till was told; stock is back where it started.
	c := newTill(t, s, s.Terminals[0])
	for _, want := range []tillclient.Sale{seen.Sale, seen.Refund} {
		r, err := c.GetSaleWithResponse(context.Background(), want.FlowNo)
		if err != nil || r.JSON200 == nil {
			t.Fatalf("stored %s: %v %s", want.FlowNo, err, bodyOf(r))
		}
		g, _ := json.Marshal(r.JSON200)
		w, _ := json.Marshal(want)
		if !bytes.Equal(g, w) {
			t.Errorf("stored %s\n%s\nnot what tillcheck.js was told\n%s", want.FlowNo, g, w)
		}
	}
	if seen.Sale.Kind != tillclient.SaleKindSale || seen.Refund.Kind != tillclient.SaleKindRefund || seen.Sale.TotalCents != 773 {
		t.Errorf("tillcheck.js saw sale %+v, refund %+v", seen.Sale, seen.Refund)
	}
	if n := stock(t, c); n != 5 {
		t.Errorf("stock after a sale of 1, its replay and its refund: %d, want 5", n)
	}
}
