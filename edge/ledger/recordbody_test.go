package ledger

import (
	"strings"
	"testing"
)

func BenchmarkPackRest(b *testing.B) {
	rest := strings.Repeat(`{"barcode":"4006381333931","qty":1,"price_cents":199},`, 200)
	b.ReportAllocs()
	for b.Loop() {
		packRest(rest)
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
				rz := packRest(tc.b.rest())
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
