package api

import (
	"encoding/json"
	"net/http"
	"net/textproto"
	"testing"
	"time"

	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/edge/ratelimit"
)

// The item answer is encoded by hand; it must be json.Marshal's bytes.
func TestItemJSONIsMarshal(t *testing.T) {
	cases := []ledger.Item{
		{Barcode: "BENCH1", Name: "item BENCH1", PriceCents: 199, Stock: 1000},
		{Barcode: "4006381333931", Name: "", PriceCents: 0, Stock: -3, Stale: true},
		{Barcode: "a.b_c-d", Name: `Bio "Vollmilch" 3,8% <1L> & mehr \ /`, PriceCents: 1 << 62, Stock: -1 << 63},
		{Barcode: "X", Name: "Crème brûlée – 200 g", PriceCents: 1, Stock: 1},
		{Barcode: "X", Name: "tab\tnew\nline\r\b\f\x00\x1f\x7f", PriceCents: 1, Stock: 1},
		{Barcode: "X", Name: "bad utf-8 \xff\xfe, separators \u2028\u2029", PriceCents: 1, Stock: 1},
	}
	for _, it := range cases {
		checkItemJSON(t, it)
	}
}

func checkItemJSON(t *testing.T, it ledger.Item) {
	t.Helper()
	want, err := json.Marshal(&it)
	if err != nil {
		t.Fatal(err)
	}
	if got := appendItemJSON(nil, &it); string(got) != string(want) {
		t.Fatalf("appendItemJSON(%+v)\n got %s\nwant %s", it, got, want)
	}
}

func FuzzItemJSONAgreesWithMarshal(f *testing.F) {
	f.Add("BENCH1", "item BENCH1", int64(199), int64(1000), false)
	f.Add("x", "<&>\"\\\u2028\xff", int64(-1), int64(0), true)
	f.Fuzz(func(t *testing.T, barcode, name string, price, stock int64, stale bool) {
		checkItemJSON(t, ledger.Item{Barcode: barcode, Name: name, PriceCents: price, Stock: stock, Stale: stale})
	})
}

// writeRateLimitHeaders assigns the header map directly: the names must
// be what Header.Set would have made of them, so the wire is unchanged.
func TestRateLimitHeaderNamesCanonical(t *testing.T) {
	h := http.Header{}
	writeRateLimitHeaders(h, ratelimit.Decision{Allowed: true, Policy: "scan", Limit: 20, Window: time.Second})
	if len(h) != 2 {
		t.Fatalf("headers %v, want RateLimit-Policy and RateLimit", h)
	}
	for name := range h {
		if c := textproto.CanonicalMIMEHeaderKey(name); c != name {
			t.Errorf("header %q set under a name Header.Set would write as %q", name, c)
		}
	}
	if h.Get("RateLimit-Policy") != `"scan";q=20;w=1` || h.Get("RateLimit") != `"scan";r=0;t=0` {
		t.Errorf("headers %v", h)
	}
}
