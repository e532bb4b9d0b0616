package cents

import (
	"fmt"
	"math"
	"math/bits"
)

const (
	// MaxItemPrice bounds an item master price (the catalog, the admin
	// API's item upsert). It is not a sale bound: the money of a sale or
	// refund is bounded by max_sale_cents, checked with overflow
	// detection, because 200 lines × 10^6 × MaxItemPrice is 2×10^20, far
	// above int64, so no per-field bound makes a product or a sum safe
	// alone.
	MaxItemPrice int64 = 1_000_000_000_000
	// DefaultMaxSaleCents is max_sale_cents when the configuration does
	// not set it: one billion in currency units, far above any real sale
	// yet far below overflow.
	DefaultMaxSaleCents int64 = 100_000_000_000
	// MaxSaleCentsCeiling is the largest max_sale_cents either daemon
	// accepts (10^15, ten trillion currency units). Below it, any sum of
	// up to 9,223 amounts fits int64 (200 lines × 10^15 = 2×10^17, far
	// under 9.2×10^18), and every amount is below 2^53, so a till in
	// JavaScript or a Lua script reading one as a double still gets the
	// exact number.
	MaxSaleCentsCeiling int64 = 1_000_000_000_000_000
)

// Mul is qty × price with overflow detection: ok is false when a factor
// is negative or the product does not fit int64.
func Mul(qty, price int64) (int64, bool) {
	if qty < 0 || price < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(qty), uint64(price))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}

// Add is a + b with overflow detection (either sign).
func Add(a, b int64) (int64, bool) {
	s := a + b
	// Overflow iff both operands have the same sign and the sum another.
	if (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0) {
		return 0, false
	}
	return s, true
}

// Line is the money of one line of a sale or refund.
type Line struct {
	Qty   int64
	Price int64 // cents per unit
}

// Rule names the amount rule a transaction breaks.
type Rule int

// The amount rules, in the order Check applies them.
const (
	TotalRange  Rule = iota + 1 // the total is outside 0..max
	QtyPositive                 // a line's qty is not positive
	PriceRange                  // a line's price is outside 0..max
	LineAbove                   // a line's qty × price is above max (or overflows)
	SumAbove                    // the lines up to Fault.Line sum above max
	Mismatch                    // the total is not the sum of the lines
)

// Fault is the first amount rule a transaction breaks: which rule, at
// which line (for the line rules and SumAbove), against which max, and
// for Mismatch the lines' sum. Callers word it for their own readers.
type Fault struct {
	Rule Rule
	Line int
	Max  int64
	Sum  int64
}

func (f *Fault) Error() string {
	switch f.Rule {
	case TotalRange:
		return fmt.Sprintf("total outside 0..%d", f.Max)
	case QtyPositive:
		return fmt.Sprintf("lines[%d]: qty is not positive", f.Line)
	case PriceRange:
		return fmt.Sprintf("lines[%d]: price outside 0..%d", f.Line, f.Max)
	case LineAbove:
		return fmt.Sprintf("lines[%d]: qty × price above %d", f.Line, f.Max)
	case SumAbove:
		return fmt.Sprintf("the lines up to lines[%d] sum above %d", f.Line, f.Max)
	case Mismatch:
		return fmt.Sprintf("total is not the sum of the lines, %d", f.Sum)
	}
	return fmt.Sprintf("amount rule %d broken", int(f.Rule))
}

// CheckLine checks one line alone (line i of its transaction): qty
// positive, price within 0..max and qty × price at most max. It returns
// the line's value.
func CheckLine(i int, l Line, max int64) (int64, *Fault) {
	if l.Qty <= 0 {
		return 0, &Fault{Rule: QtyPositive, Line: i, Max: max}
	}
	if l.Price < 0 || l.Price > max {
		return 0, &Fault{Rule: PriceRange, Line: i, Max: max}
	}
	v, ok := Mul(l.Qty, l.Price)
	if !ok || v > max {
		return 0, &Fault{Rule: LineAbove, Line: i, Max: max}
	}
	return v, nil
}

// Sum is the checked sum of the lines' values (qty × price): a product
// or running sum that overflows or passes max is SumAbove at that line.
func Sum(lines []Line, max int64) (int64, *Fault) {
	var sum int64
	for i, l := range lines {
		v, ok := Mul(l.Qty, l.Price)
		if ok {
			sum, ok = Add(sum, v)
		}
		if !ok || sum > max {
			return 0, &Fault{Rule: SumAbove, Line: i, Max: max}
		}
	}
	return sum, nil
}

// Check is the amount rule of a transaction against max (its store's
// max_sale_cents): the total within 0..max; then, line by line, the
// line (CheckLine) and the running sum at most max; then the total equal
// to the sum. The first rule broken is the Fault; nil means the amounts
// are sound.
func Check(lines []Line, total, max int64) *Fault {
	if total < 0 || total > max {
		return &Fault{Rule: TotalRange, Max: max}
	}
	var sum int64
	for i, l := range lines {
		v, f := CheckLine(i, l, max)
		if f != nil {
			return f
		}
		var ok bool
		if sum, ok = Add(sum, v); !ok || sum > max {
			return &Fault{Rule: SumAbove, Line: i, Max: max}
		}
	}
	if sum != total {
		return &Fault{Rule: Mismatch, Max: max, Sum: sum}
	}
	return nil
}
