package wire

import (
	"fmt"
	"math"
	"math/bits"
)

// Money bounds shared by posedge (config max_sale_cents) and posedge-hq.
const (
	// DefaultMaxSaleCents is the default max_sale_cents: one billion in
	// currency units, far above any real sale yet far below overflow.
	DefaultMaxSaleCents int64 = 100_000_000_000
	// MaxSaleCentsLimit is the largest max_sale_cents either daemon
	// accepts (10^15, ten trillion currency units). Below it, any sum of
	// up to 9,223 amounts fits int64 (200 lines × 10^15 = 2×10^17, far
	// under 9.2×10^18), and every amount is below 2^53, so a till in
	// JavaScript or a Lua script reading one as a double still gets the
	// exact number.
	MaxSaleCentsLimit int64 = 1_000_000_000_000_000
)

// MulCents is qty × price with overflow detection: ok is false when a
// factor is negative or the product does not fit int64.
func MulCents(qty, price int64) (int64, bool) {
	if qty < 0 || price < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(qty), uint64(price))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}

// AddCents is a + b with overflow detection (either sign).
func AddCents(a, b int64) (int64, bool) {
	s := a + b
	// Overflow iff both operands have the same sign and the sum another.
	if (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0) {
		return 0, false
	}
	return s, true
}

// Line is one line of a transaction body as HQ checks it.
type Line struct {
	Barcode    string `json:"barcode"`
	Qty        int64  `json:"qty"`
	PriceCents int64  `json:"price_cents"`
}

// CheckAmounts checks the money of a transaction against maxCents: every
// price, every line (qty × price) and the total at most maxCents, the
// quantities positive, and the lines summing (without overflow) to the
// total. The error says which; it wraps ErrInvalid.
func CheckAmounts(lines []Line, total, maxCents int64) error {
	if total < 0 || total > maxCents {
		return fmt.Errorf("%w: total_cents %d outside 0..max_sale_cents (%d)", ErrInvalid, total, maxCents)
	}
	var sum int64
	for i, l := range lines {
		if l.Qty <= 0 {
			return fmt.Errorf("%w: lines[%d].qty %d is not positive", ErrInvalid, i, l.Qty)
		}
		if l.PriceCents < 0 || l.PriceCents > maxCents {
			return fmt.Errorf("%w: lines[%d].price_cents %d outside 0..max_sale_cents (%d)", ErrInvalid, i, l.PriceCents, maxCents)
		}
		v, ok := MulCents(l.Qty, l.PriceCents)
		if !ok || v > maxCents {
			return fmt.Errorf("%w: lines[%d] qty × price_cents (%d × %d) above max_sale_cents (%d)", ErrInvalid, i, l.Qty, l.PriceCents, maxCents)
		}
		if sum, ok = AddCents(sum, v); !ok || sum > maxCents {
			return fmt.Errorf("%w: the lines up to lines[%d] sum above max_sale_cents (%d)", ErrInvalid, i, maxCents)
		}
	}
	if sum != total {
		return fmt.Errorf("%w: total_cents %d is not the sum of the lines, %d", ErrInvalid, total, sum)
	}
	return nil
}
