package moneycheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/bits"
	"sort"
	"time"
)

// Report says what was checked.
type Report struct {
	Ops, Told, Indeterminate, Retries, Refunds, HQRows, Explained int
	// OutOfStock counts the refusals "insufficient_stock" held against
	// the stock the history allows.
	OutOfStock int
}

func (r Report) String() string {
	return fmt.Sprintf("moneycheck: %d ops, %d told 2xx, %d indeterminate (%d found at HQ), %d retries, %d refunds, %d HQ rows, %d refused for want of stock",
		r.Ops, r.Told, r.Indeterminate, r.Explained, r.Retries, r.Refunds, r.HQRows, r.OutOfStock)
}

type answer struct {
	FlowNo     string    `json:"flow_no"`
	TerminalID string    `json:"terminal_id"`
	Kind       string    `json:"kind"`
	TotalCents int64     `json:"total_cents"`
	Tender     string    `json:"tender"`
	Original   string    `json:"original_flow_no"`
	Lines      []Line    `json:"lines"`
	OccurredAt time.Time `json:"occurred_at"`
}

func isInProgress(body []byte) bool { return bytes.Contains(body, []byte("request_in_progress")) }

type opKey struct{ terminal, key string }

// effect is one operation that took effect exactly once.
type effect struct {
	op  Op
	ans answer
}

func mulAdd(sum, qty, price int64) (int64, bool) {
	if qty < 0 || price < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(qty), uint64(price))
	if hi != 0 || lo > 1<<62 {
		return 0, false
	}
	s := sum + int64(lo)
	return s, s >= sum
}

// Check returns what it checked and the first counter-example found.
func Check(ops []Op, w World) (Report, error) {
	r := Report{Ops: len(ops)}
	told := map[opKey]Op{}
	refused := map[opKey]Op{}
	var outOfStock []Op
	var order []opKey
	var indet []Op
	for _, op := range ops {
		k := opKey{op.Terminal, op.Key}
		if op.Refused() {
			if prev, ok := told[k]; ok {
				return r, fmt.Errorf("retry of key %s on %s was refused after it was told:\n first %s\n then  %d %s", op.Key, op.Terminal, prev.Body, op.Status, op.Body)
			}
			refused[k] = op
			if errorCode(op.Body) == "insufficient_stock" {
				outOfStock = append(outOfStock, op)
			}
			continue
		}
		if op.Indeterminate() {
			r.Indeterminate++
			indet = append(indet, op)
			continue
		}
		if op.Status < 200 || op.Status > 299 {
			continue
		}
		r.Told++
		if prev, ok := told[k]; ok {
			r.Retries++
			if !bytes.Equal(prev.Body, op.Body) {
				return r, fmt.Errorf("retry of key %s on %s got a different answer:\n first %s\n then  %s", op.Key, op.Terminal, prev.Body, op.Body)
			}
			continue
		}
		told[k] = op
		order = append(order, k)
	}

	// Every told answer matches its intent; flow numbers are unique.
	byFlow := map[string]effect{}
	var effects []effect
	for _, k := range order {
		op := told[k]
		var a answer
		if err := json.Unmarshal(op.Body, &a); err != nil {
			return r, fmt.Errorf("decoding the 2xx answer to key %s on %s: %w", op.Key, op.Terminal, err)
		}
		if err := matches(op, a); err != nil {
			return r, fmt.Errorf("answer to key %s on %s: %w (body %s)", op.Key, op.Terminal, err, op.Body)
		}
		if a.FlowNo == "" {
			return r, fmt.Errorf("answer to key %s on %s has no flow_no", op.Key, op.Terminal)
		}
		if prev, ok := byFlow[a.FlowNo]; ok {
			return r, fmt.Errorf("flow_no %s given to two operations: key %s on %s and key %s on %s", a.FlowNo, prev.op.Key, prev.op.Terminal, op.Key, op.Terminal)
		}
		e := effect{op, a}
		byFlow[a.FlowNo] = e
		effects = append(effects, e)
	}

	// HQ holds every told transaction byte for byte, and nothing else but
	// indeterminate ops whose row matches their intent (each used once).
	if w.HQ != nil {
		r.HQRows = len(w.HQ)
		for _, e := range effects {
			body, ok := w.HQ[e.ans.FlowNo]
			if !ok {
				return r, fmt.Errorf("flow_no %s (key %s on %s) was told to the till but is not at HQ", e.ans.FlowNo, e.op.Key, e.op.Terminal)
			}
			if !bytes.Equal(body, e.op.Body) {
				return r, fmt.Errorf("flow_no %s differs at HQ:\n till %s\n hq   %s", e.ans.FlowNo, e.op.Body, body)
			}
		}
		flows := make([]string, 0, len(w.HQ))
		for f := range w.HQ {
			if _, ok := byFlow[f]; !ok {
				flows = append(flows, f)
			}
		}
		sort.Strings(flows)
		used := map[opKey]bool{}
		for k := range told {
			used[k] = true // a told key cannot explain a second row
		}
		for k := range refused {
			used[k] = true // nor can a key the daemon said it did not take
		}
		for _, f := range flows {
			var a answer
			if err := json.Unmarshal(w.HQ[f], &a); err != nil {
				return r, fmt.Errorf("decoding HQ row %s: %w", f, err)
			}
			found := false
			for _, op := range indet {
				k := opKey{op.Terminal, op.Key}
				if used[k] || op.Terminal != a.TerminalID || matches(op, a) != nil {
					continue
				}
				used[k], found = true, true
				r.Explained++
				e := effect{op, a}
				byFlow[f] = e
				effects = append(effects, e)
				break
			}
			if !found {
				return r, fmt.Errorf("HQ holds flow_no %s that no till was told and no indeterminate op explains: %s", f, w.HQ[f])
			}
		}
	}

	// Refunds never pay back more than the original charged for a barcode.
	type bq struct {
		flow, barcode string
	}
	charged, qty := map[bq]int64{}, map[bq]int64{}
	for _, e := range effects {
		if e.ans.Kind != "sale" {
			continue
		}
		for _, l := range e.ans.Lines {
			k := bq{e.ans.FlowNo, l.Barcode}
			c, _ := mulAdd(charged[k], l.Qty, l.PriceCents)
			charged[k], qty[k] = c, qty[k]+l.Qty
		}
	}
	for _, e := range effects {
		if e.ans.Kind != "refund" {
			continue
		}
		r.Refunds++
		for _, l := range e.ans.Lines {
			k := bq{e.ans.Original, l.Barcode}
			c, ok := mulAdd(0, l.Qty, l.PriceCents)
			if !ok {
				return r, fmt.Errorf("refund %s line %s overflows", e.ans.FlowNo, l.Barcode)
			}
			charged[k] -= c
			qty[k] -= l.Qty
			if charged[k] < 0 || qty[k] < 0 {
				return r, fmt.Errorf("refunds of %s on flow %s exceed the sale (refund %s)", l.Barcode, e.ans.Original, e.ans.FlowNo)
			}
		}
	}

	// Counters and stock recomputed from the effects.
	terms, tenders, hours := map[string]Counters{}, map[string]Counters{}, map[string]Counters{}
	var totals Counters
	loc := w.Location
	if loc == nil {
		loc = time.UTC
	}
	stock := map[string]int64{}
	for b, n := range w.InitialStock {
		stock[b] = n
	}
	for _, e := range effects {
		hour := e.ans.OccurredAt.In(loc).Format("15")
		t, td, h := terms[e.ans.TerminalID], tenders[e.ans.Tender], hours[hour]
		sign := int64(-1)
		if e.ans.Kind == "refund" {
			sign = 1
		}
		for _, c := range []*Counters{&t, &td, &h, &totals} {
			c.add(e.ans.Kind, e.ans.TotalCents)
		}
		terms[e.ans.TerminalID], tenders[e.ans.Tender], hours[hour] = t, td, h
		for _, l := range e.ans.Lines {
			stock[l.Barcode] += sign * l.Qty
		}
	}
	if err := sameCounters("terminal", terms, w.Terminals); err != nil {
		return r, err
	}
	if err := sameCounters("tender", tenders, w.Tenders); err != nil {
		return r, err
	}
	if err := sameCounters("hour", hours, w.Hours); err != nil {
		return r, err
	}
	if w.Totals != nil && *w.Totals != totals {
		return r, fmt.Errorf("daily totals are %+v, the history says %+v", *w.Totals, totals)
	}
	if w.FinalStock != nil {
		for b, want := range stock {
			if _, known := w.InitialStock[b]; !known {
				continue
			}
			if got := w.FinalStock[b]; got != want {
				return r, fmt.Errorf("stock of %s is %d, the history says %d", b, got, want)
			}
		}
	}
	if w.InitialStock != nil {
		if err := neverOversold(effects, w); err != nil {
			return r, err
		}
		r.OutOfStock = len(outOfStock)
		if err := refusalsHaveCause(outOfStock, effects, w); err != nil {
			return r, err
		}
	}
	return r, nil
}

// refusalsHaveCause: a sale refused "insufficient_stock" must have been
// short of one of its items at some moment. The least stock an item can
// ever have had is its initial stock less every unit any sale of the
// history took (in any mode, in any order, refunds left out: they only
// add). When even that covers every line of the refused sale, no order
// of events explains the refusal: the till was turned away from stock
// that was there. A refusal with an item of unknown initial stock is not
// judged.
func refusalsHaveCause(refusals []Op, effects []effect, w World) error {
	least := map[string]int64{}
	for b, n := range w.InitialStock {
		least[b] = n
	}
	for _, e := range effects {
		if e.ans.Kind != "sale" {
			continue
		}
		for _, l := range e.ans.Lines {
			least[l.Barcode] -= l.Qty
		}
	}
	for _, op := range refusals {
		want := map[string]int64{}
		known := true
		for _, l := range op.Lines {
			want[l.Barcode] += l.Qty
			_, ok := w.InitialStock[l.Barcode]
			known = known && ok
		}
		if !known {
			continue // an item of unknown stock may have been the short one
		}
		short := false
		for b, q := range want {
			short = short || least[b] < q
		}
		if !short {
			return fmt.Errorf("sale key %s on %s was refused insufficient_stock, yet the history never left less stock than it asked for (%v): %s",
				op.Key, op.Terminal, least, op.Body)
		}
	}
	return nil
}

// errorCode is the code of an error answer ({"error":{"code":…}}).
func errorCode(body []byte) string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e) // not an error answer: no code
	return e.Error.Code
}

// neverOversold: a sale in normal mode is refused when stock is short, so
// stock never goes below zero by one; degraded and batch sales may take
// it there (contract: stock not enforced). The normal-mode effects are
// replayed per item in flow number order (the order Redis's sequence
// gave them), each degraded or batch refund counted before all of them
// and each degraded or batch sale after (the most stock any order allows:
// when even that goes below zero, no order of events explains it).
func neverOversold(effects []effect, w World) error {
	degraded := w.Degraded
	if degraded == nil {
		degraded = DegradedFlow
	}
	stock := map[string]int64{}
	for b, n := range w.InitialStock {
		stock[b] = n
	}
	var normal []effect
	for _, e := range effects {
		if e.op.Batch || degraded(e.ans.FlowNo) {
			if e.ans.Kind == "refund" {
				for _, l := range e.ans.Lines {
					stock[l.Barcode] += l.Qty
				}
			}
			continue
		}
		normal = append(normal, e)
	}
	sort.Slice(normal, func(i, j int) bool {
		a, b := normal[i].ans.FlowNo, normal[j].ans.FlowNo
		return len(a) < len(b) || len(a) == len(b) && a < b
	})
	for _, e := range normal {
		for _, l := range e.ans.Lines {
			if _, known := w.InitialStock[l.Barcode]; !known {
				continue
			}
			if e.ans.Kind == "refund" {
				stock[l.Barcode] += l.Qty
				continue
			}
			stock[l.Barcode] -= l.Qty
			if stock[l.Barcode] < 0 {
				return fmt.Errorf("normal-mode sale %s (key %s on %s) took stock of %s to %d: not enough stock must be refused",
					e.ans.FlowNo, e.op.Key, e.op.Terminal, l.Barcode, stock[l.Barcode])
			}
		}
	}
	return nil
}

func (c *Counters) add(kind string, cents int64) {
	if kind == "refund" {
		c.Refunds++
		c.RefundCents += cents
		return
	}
	c.Sales++
	c.SalesCents += cents
}

func sameCounters(what string, want, got map[string]Counters) error {
	if got == nil {
		return nil
	}
	for k, w := range want {
		if got[k] != w {
			return fmt.Errorf("%s %s counters are %+v, the history says %+v", what, k, got[k], w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok && g != (Counters{}) {
			return fmt.Errorf("%s %s counters are %+v, the history says none", what, k, g)
		}
	}
	return nil
}

// matches checks an answer against its intent, recomputing the total.
func matches(op Op, a answer) error {
	if a.Kind != op.Kind {
		return fmt.Errorf("kind %q, intent %q", a.Kind, op.Kind)
	}
	if a.TerminalID != "" && a.TerminalID != op.Terminal {
		return fmt.Errorf("terminal %q, intent %q", a.TerminalID, op.Terminal)
	}
	if len(a.Lines) != len(op.Lines) {
		return fmt.Errorf("%d lines, intent %d", len(a.Lines), len(op.Lines))
	}
	var sum int64
	for i, l := range a.Lines {
		in := op.Lines[i]
		if l.Barcode != in.Barcode || l.Qty != in.Qty || op.Kind == "sale" && l.PriceCents != in.PriceCents {
			return fmt.Errorf("line %d is %+v, intent %+v", i, l, in)
		}
		var ok bool
		if sum, ok = mulAdd(sum, l.Qty, l.PriceCents); !ok {
			return fmt.Errorf("line %d overflows", i)
		}
	}
	if sum != a.TotalCents || a.TotalCents != op.TotalCents {
		return fmt.Errorf("total %d, lines sum to %d, intent %d", a.TotalCents, sum, op.TotalCents)
	}
	if op.Kind == "sale" && a.Tender != op.Tender {
		return fmt.Errorf("tender %q, intent %q", a.Tender, op.Tender)
	}
	if op.Kind == "refund" && a.Original != op.Original {
		return fmt.Errorf("original %q, intent %q", a.Original, op.Original)
	}
	if !op.OccurredAt.IsZero() && !a.OccurredAt.Equal(op.OccurredAt) {
		return fmt.Errorf("occurred_at %s, intent %s", a.OccurredAt.Format(time.RFC3339Nano), op.OccurredAt.Format(time.RFC3339))
	}
	return nil
}
