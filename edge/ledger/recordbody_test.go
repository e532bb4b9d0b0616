package ledger

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

func BenchmarkPackRest(b *testing.B) {
	rest := strings.Repeat(`{"barcode":"4006381333931","qty":1,"price_cents":199},`, 200)
	p := newResultPacker()
	b.ReportAllocs()
	for b.Loop() {
		p.pack(rest)
	}
}

// TestRecordBodyRoundTrip: every stored form gives back the result
// withFlow answers, and an unknown form is an error, not a wrong answer.
func TestRecordBodyRoundTrip(t *testing.T) {
	big := body{Kind: "sale", Tender: "cash"}
	for range 200 {
		big.Lines = append(big.Lines, Line{Barcode: "4006381333931", Qty: 1, PriceCents: 199})
	}
	small := body{Kind: "sale", Tender: "cash", Lines: []Line{{Barcode: "A", Qty: 1, PriceCents: 100}}}
	for _, tc := range []struct {
		name       string
		b          body
		old, plain bool
	}{
		{"one line", small, false, true},
		{"200 lines", big, false, false},
		{"old layout", big, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := string(tc.b.withFlow("1000000000000042"))
			var got []byte
			var err error
			if tc.old {
				got, err = recordBody("1000000000000042", want, "")
			} else {
				rz := newResultPacker().pack(tc.b.rest())
				if (rz[0] == packPlain) != tc.plain {
					t.Fatalf("form %q for %d bytes", rz[0], len(tc.b.rest()))
				}
				got, err = recordBody("1000000000000042", "", rz)
			}
			if err != nil || string(got) != want {
				t.Fatalf("got %q, %v; want %q", got, err, want)
			}
		})
	}
	if _, err := recordBody("1", "", "?x"); err == nil {
		t.Fatal("unknown form accepted")
	}
}

// TestResultPackerReusesItsCompressors: one packer, used by concurrent
// sales of different sizes, gives back each result exactly (a compressor
// returned to the pool without its Reset would leak one sale's bytes
// into the next).
func TestResultPackerReusesItsCompressors(t *testing.T) {
	p := newResultPacker()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				b := body{Kind: "sale", Tender: "cash"}
				for n := range 30 + 7*((g+i)%20) {
					b.Lines = append(b.Lines, Line{Barcode: fmt.Sprintf("40063813%05d", n*g+i), Qty: int64(1 + n%3), PriceCents: int64(100 + n)})
				}
				flow := fmt.Sprintf("10000000%08d", g*1000+i)
				rz := p.pack(b.rest())
				got, err := recordBody(flow, "", rz)
				if want := string(b.withFlow(flow)); err != nil || string(got) != want {
					t.Errorf("goroutine %d sale %d: got %.80q…, %v; want %.80q…", g, i, got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
