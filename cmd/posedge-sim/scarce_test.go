package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/moneycheck"
	"github.com/posedge/posedge/internal/testenv"
)

// TestScarceItemsRaceAndAreAudited: four terminals of the simulator race
// a real store for a scarce item with stock 5 (--scarce 1), some sales
// refunded (a unit back for the next race). The race must happen (sales
// refused 409 insufficient_stock), the item's stock never goes below
// zero, and `posedge-sim check --stock` passes the history — and fails it
// once the sales that emptied the shelf are taken out, leaving the
// refusals without a cause.
func TestScarceItemsRaceAndAreAudited(t *testing.T) {
	bin := t.TempDir()
	if err := testenv.BuildBinaries(bin); err != nil {
		t.Fatal(err)
	}
	s := testenv.StartStore(t, testenv.StoreOptions{Bin: bin, Limits: loose})
	var terms []Terminal
	for _, id := range s.Terminals {
		terms = append(terms, Terminal{ID: id, Key: s.Keys[id]})
	}
	c := Config{URL: s.EdgeURL, AdminURL: s.AdminURL, Terminals: terms, SeedItems: 3, ScarceItems: 1, ScarceStock: 5,
		Rate: 8, Duration: 4 * time.Second, RefundFraction: 0.3, History: &moneycheck.History{}}
	sum, err := Run(context.Background(), c, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d sales, %d refunds, %d sold out, errors %v", sum.Sales, sum.Refunds, sum.SoldOut, sum.Errors)
	if sum.SoldOut == 0 {
		t.Fatalf("no sale was refused for want of stock: the terminals never raced for the last units (%d sales)", sum.Sales)
	}
	if len(sum.Errors) != 0 {
		t.Fatalf("errors: %v", sum.Errors)
	}
	r := s.T(s.Terminals[0], "GET", "/v1/items/"+ScarceBarcode(1), nil, nil)
	if st, _ := r.JSON()["stock"].(float64); r.Status != 200 || st < 0 {
		t.Fatalf("scarce item after the race: %d %s, want stock >= 0", r.Status, r.Body)
	}

	path := filepath.Join(t.TempDir(), "history.json")
	ops := c.History.Ops()
	if err := writeHistory(path, ops); err != nil {
		t.Fatal(err)
	}
	stock := strings.TrimPrefix(stockFlag(SeededStock(c)), " --stock ")
	var out strings.Builder
	if err := runCheck([]string{"--stock", stock, path}, &out); err != nil {
		t.Fatalf("check of the race's history: %v\n%s", err, &out)
	}
	t.Log(strings.TrimSpace(out.String()))
	if !strings.Contains(out.String(), "refused for want of stock") || strings.Contains(out.String(), " 0 refused for want of stock") {
		t.Fatalf("the checker held no refusal against the stock: %s", &out)
	}

	// Without the sales that took the scarce item (and the refunds, which
	// would lack their sale), nothing emptied the shelf: every refusal
	// must be found causeless.
	var kept []moneycheck.Op
	for _, op := range ops {
		if op.Kind == "refund" || op.Status == http.StatusCreated && sells(op, ScarceBarcode(1)) {
			continue
		}
		kept = append(kept, op)
	}
	if err := writeHistory(path, kept); err != nil {
		t.Fatal(err)
	}
	if err := runCheck([]string{"--stock", stock, path}, io.Discard); err == nil || !strings.Contains(err.Error(), "never left less stock") {
		t.Fatalf("check of refusals with stock on the shelf: %v, want a causeless refusal", err)
	}
}

// loose are limits four terminals at 8 sales a second never reach, so
// that every second brings its sales (the contract's pay limit would
// hold them back and the scarce item might not run out).
const loose = `  store:    {limit: 100000, window: "1s"}
  terminal: {limit: 100000, window: "1s"}
  actions:
    pay:    {limit: 100000, window: "1s"}
    scan:   {limit: 100000, window: "1s"}
    refund: {limit: 100000, window: "1s"}
    sync:   {limit: 100000, window: "1s"}
  terminal_bytes: {limit: 1073741824, window: "1h"}
`

func sells(op moneycheck.Op, barcode string) bool {
	var a struct {
		Lines []moneycheck.Line `json:"lines"`
	}
	_ = json.Unmarshal(op.Body, &a)
	for _, l := range a.Lines {
		if l.Barcode == barcode {
			return true
		}
	}
	return false
}
