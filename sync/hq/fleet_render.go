package hq

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/posedge/posedge/sync/hqdb"
)

// ClockOffsetLimit is how far a store's clock may be from HQ's before the
// fleet view and the alert rules call it off (contract §7: 5 s).
const ClockOffsetLimit = 5 * time.Second

// Problem ranks, worst first: the order `posedge-hq stores` lists stores
// in (contract §7: silent, incomplete or conflicting first).
const (
	rankSilent = iota
	rankIncomplete
	rankConflicts
	rankOldVersion
	rankClockOff
	rankOK
)

// FleetLine is one store of the fleet as an engineer reads it: what is
// wrong with it, worst first.
type FleetLine struct {
	hqdb.StoreEntry
	Problems []string // "silent", "incomplete", "conflicts", "old version", "clock off"
	rank     int
}

// NeedsAction reports whether the store fails the §7 check (silent,
// incomplete or conflicting): an old version or an off clock is shown
// but leaves the exit status 0 (the alert rules page for the clock).
func (l FleetLine) NeedsAction() bool { return l.rank <= rankConflicts }

// JudgeFleet sorts es worst first and names each store's problems. A
// store runs an old version when its version is below the newest one in
// the fleet (docs/operations.md); stores with no version yet (no format-2
// heartbeat) are not compared.
func JudgeFleet(es []hqdb.StoreEntry) []FleetLine {
	newest := ""
	for _, e := range es {
		if e.Version != "" && (newest == "" || compareVersions(e.Version, newest) > 0) {
			newest = e.Version
		}
	}
	out := make([]FleetLine, 0, len(es))
	for _, e := range es {
		l := FleetLine{StoreEntry: e, rank: rankOK}
		add := func(rank int, p string) {
			l.Problems = append(l.Problems, p)
			l.rank = min(l.rank, rank)
		}
		if e.Silent {
			add(rankSilent, "silent")
		}
		if e.IncompleteDays > 0 {
			add(rankIncomplete, "incomplete")
		}
		if e.Conflicts > 0 {
			add(rankConflicts, "conflicts")
		}
		if e.Version != "" && compareVersions(e.Version, newest) < 0 {
			add(rankOldVersion, "old version")
		}
		if e.HasHeartbeat && absMS(e.ClockOffsetMS) > ClockOffsetLimit.Milliseconds() {
			add(rankClockOff, "clock off")
		}
		out = append(out, l)
	}
	slices.SortStableFunc(out, func(a, b FleetLine) int {
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		return strings.Compare(a.StoreID, b.StoreID)
	})
	return out
}

// FleetOK is the §7 verdict: every store heard from, complete and free of
// conflicts.
func FleetOK(ls []FleetLine) bool {
	for _, l := range ls {
		if l.NeedsAction() {
			return false
		}
	}
	return true
}

// RenderFleet writes the table of `posedge-hq stores`, ages judged at now.
func RenderFleet(w io.Writer, ls []FleetLine, now time.Time) error {
	bad := 0
	for _, l := range ls {
		if l.NeedsAction() {
			bad++
		}
	}
	switch {
	case len(ls) == 0:
		fmt.Fprintln(w, "OK: no store heard from yet")
		return nil
	case bad == 0:
		fmt.Fprintf(w, "OK: %d stores, every one heard from, complete and free of conflicts\n", len(ls))
	default:
		fmt.Fprintf(w, "CRITICAL: %d of %d stores silent, incomplete or conflicting\n", bad, len(ls))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STORE\tSTATUS\tVERSION\tLAST HEARD\tHEARTBEAT\tBACKLOG\tOLDEST UNSENT\tCLOCK\tINCOMPLETE\tCONFLICTS\tQUARANTINED\tTXNS")
	for _, l := range ls {
		status := "ok"
		if len(l.Problems) > 0 {
			status = strings.Join(l.Problems, ",")
		}
		clock := "-"
		if l.HasHeartbeat {
			clock = formatOffset(l.ClockOffsetMS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\n", l.StoreID, status, dash(l.Version),
			age(now, l.LastReceivedAt), age(now, l.LastHeartbeatAt), l.Backlog, age(now, l.OldestUnsentAt), clock,
			l.IncompleteDays, l.Conflicts, l.Quarantined, l.Transactions)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// age is "3m ago" style, whole units, "-" for never.
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
}

// formatOffset is the store's clock minus HQ's, signed, in seconds with
// one decimal: "+7.2s", "-0.0s".
func formatOffset(ms int64) string {
	sign := "+"
	if ms < 0 {
		sign = "-"
	}
	a := absMS(ms)
	return fmt.Sprintf("%s%d.%ds", sign, a/1000, (a%1000)/100)
}

func absMS(ms int64) int64 {
	if ms < 0 {
		return -ms
	}
	return ms
}

// compareVersions orders daemon versions ("v1.10.2", "1.9.0-rc1") by their
// numeric parts, then, between equal numbers, a release above a
// pre-release ("1.2.0" > "1.2.0-rc1"); anything else compares as text.
func compareVersions(a, b string) int {
	na, ra := versionParts(a)
	nb, rb := versionParts(b)
	for i := 0; i < max(len(na), len(nb)); i++ {
		var x, y int64
		if i < len(na) {
			x = na[i]
		}
		if i < len(nb) {
			y = nb[i]
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	switch {
	case ra == rb:
		return 0
	case ra == "":
		return 1
	case rb == "":
		return -1
	}
	return strings.Compare(ra, rb)
}

// versionParts splits "v1.2.3-rc1" into [1 2 3] and "rc1".
func versionParts(v string) ([]int64, string) {
	v = strings.TrimPrefix(v, "v")
	core, rest, _ := strings.Cut(v, "-")
	var nums []int64
	for _, p := range strings.Split(core, ".") {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, v // not a dotted number ("dev"): text only
		}
		nums = append(nums, n)
	}
	return nums, rest
}
