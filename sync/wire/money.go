package wire

import (
	"fmt"

	"github.com/posedge/posedge/internal/cents"
)

// Line is one line of a transaction body as HQ checks it.
type Line struct {
	Barcode    string `json:"barcode"`
	Qty        int64  `json:"qty"`
	PriceCents int64  `json:"price_cents"`
}

// CheckAmounts checks the money of a transaction against maxCents by the
// one amount rule (cents.Check): every price, every line (qty × price)
// and the total at most maxCents, the quantities positive, and the lines
// summing (without overflow) to the total. The error says which; it
// wraps ErrInvalid.
func CheckAmounts(lines []Line, total, maxCents int64) error {
	amounts := make([]cents.Line, len(lines))
	for i, l := range lines {
		amounts[i] = cents.Line{Qty: l.Qty, Price: l.PriceCents}
	}
	f := cents.Check(amounts, total, maxCents)
	if f == nil {
		return nil
	}
	switch f.Rule {
	case cents.TotalRange:
		return fmt.Errorf("%w: total_cents %d outside 0..max_sale_cents (%d)", ErrInvalid, total, maxCents)
	case cents.QtyPositive:
		return fmt.Errorf("%w: lines[%d].qty %d is not positive", ErrInvalid, f.Line, lines[f.Line].Qty)
	case cents.PriceRange:
		return fmt.Errorf("%w: lines[%d].price_cents %d outside 0..max_sale_cents (%d)", ErrInvalid, f.Line, lines[f.Line].PriceCents, maxCents)
	case cents.LineAbove:
		l := lines[f.Line]
		return fmt.Errorf("%w: lines[%d] qty × price_cents (%d × %d) above max_sale_cents (%d)", ErrInvalid, f.Line, l.Qty, l.PriceCents, maxCents)
	case cents.SumAbove:
		return fmt.Errorf("%w: the lines up to lines[%d] sum above max_sale_cents (%d)", ErrInvalid, f.Line, maxCents)
	case cents.Mismatch:
		return fmt.Errorf("%w: total_cents %d is not the sum of the lines, %d", ErrInvalid, total, f.Sum)
	}
	return fmt.Errorf("%w: %v", ErrInvalid, f)
}
