package moneycheck

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Span is a time a fault of some kind was in force, From its injection
// To its heal (a zero To: until the end of the history).
type Span struct {
	Kind     string
	From, To time.Time
}

// Gap is a time no till was told a sale: between two consecutive 2xx
// answers to sales (the first and last of the history bound it). Kinds
// are the faults it is held against: those in force when it began
// (stretched by the recovery allowance: a fault's effects outlast its
// heal) or injected within its first second ("none" when there are none);
// a fault injected later in a long gap did not start it. During lists
// every kind in force at some time of it.
type Gap struct {
	From, To time.Time
	Kinds    []string
	During   []string
}

// Len is the gap's length.
func (g Gap) Len() time.Duration { return g.To.Sub(g.From) }

func (g Gap) String() string {
	return fmt.Sprintf("%v (from %s, begun under %s; during it %s)", g.Len().Round(time.Millisecond), g.From.Format("15:04:05.000"),
		strings.Join(g.Kinds, "+"), strings.Join(g.During, "+"))
}

// NoSale is the no-sale window of a history: the longest time no till was
// told a sale, overall and per fault kind, a gap counting for every kind
// it is held against (Gap.Kinds).
type NoSale struct {
	Longest Gap
	ByKind  map[string]Gap
	Told    int   // 2xx sales the gaps are measured between
	Long    []Gap // every gap over a second, in order
}

// NoSaleWindows measures the no-sale window of ops under the faults of
// spans. Only answered sales count (Op.At is when the answer came); a
// replayed answer counts too, since the till was told then.
func NoSaleWindows(ops []Op, spans []Span, recovery time.Duration) NoSale {
	var at []time.Time
	for _, op := range ops {
		if op.Kind == "sale" && op.Status >= 200 && op.Status <= 299 && !op.At.IsZero() {
			at = append(at, op.At)
		}
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	ns := NoSale{ByKind: map[string]Gap{}, Told: len(at)}
	for i := 1; i < len(at); i++ {
		g := Gap{From: at[i-1], To: at[i]}
		began := g.From.Add(time.Second)
		if began.After(g.To) {
			began = g.To
		}
		cause, during := map[string]bool{}, map[string]bool{}
		for _, sp := range spans {
			to := sp.To
			if to.IsZero() {
				to = at[len(at)-1]
			}
			if sp.From.After(g.To) || to.Add(recovery).Before(g.From) {
				continue
			}
			if !during[sp.Kind] {
				during[sp.Kind] = true
				g.During = append(g.During, sp.Kind)
			}
			if !sp.From.After(began) && !cause[sp.Kind] {
				cause[sp.Kind] = true
				g.Kinds = append(g.Kinds, sp.Kind)
			}
		}
		sort.Strings(g.Kinds)
		sort.Strings(g.During)
		if len(g.Kinds) == 0 {
			g.Kinds = []string{"none"}
		}
		if g.Len() > ns.Longest.Len() {
			ns.Longest = g
		}
		if g.Len() > time.Second {
			ns.Long = append(ns.Long, g)
		}
		for _, k := range g.Kinds {
			if g.Len() > ns.ByKind[k].Len() {
				ns.ByKind[k] = g
			}
		}
	}
	return ns
}

// Kinds lists the kinds of ByKind in order, longest window first.
func (ns NoSale) Kinds() []string {
	var ks []string
	for k := range ns.ByKind {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool {
		a, b := ns.ByKind[ks[i]].Len(), ns.ByKind[ks[j]].Len()
		return a > b || a == b && ks[i] < ks[j]
	})
	return ks
}
