package ledger

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/posedge/posedge/edge/redisdb"
	"github.com/posedge/posedge/offline/journal"
)

// Totals are the four counters of a day, hour, terminal or tender.
type Totals = journal.DayTotals

// Tenders the daily stats always list.
var tenderNames = []string{"cash", "card", "mobile", "other"}

// Daily is GET /admin/v1/stats/daily.
type Daily struct {
	Date      string            `json:"date"`
	Terminals map[string]Totals `json:"terminals"`
	Totals    Totals            `json:"totals"`
	Tenders   map[string]Totals `json:"tenders"`
	Source    string            `json:"source"` // redis | journal
}

// Hourly is GET /admin/v1/stats/hourly.
type Hourly struct {
	Date   string            `json:"date"`
	Hours  map[string]Totals `json:"hours"`
	Source string            `json:"source"`
}

func setField(t *Totals, name string, v int64) {
	switch name {
	case "sales":
		t.Sales = v
	case "sales_cents":
		t.SalesCents = v
	case "refunds":
		t.Refunds = v
	case "refund_cents":
		t.RefundCents = v
	}
}

func addTotals(a *Totals, b Totals) {
	a.Sales += b.Sales
	a.SalesCents += b.SalesCents
	a.Refunds += b.Refunds
	a.RefundCents += b.RefundCents
}

// DailyStats reads a day's counters from Redis, or sums the journal while
// Redis is down.
func (l *Ledger) DailyStats(ctx context.Context, day string) (*Daily, error) {
	d := &Daily{Date: day, Terminals: map[string]Totals{}, Tenders: map[string]Totals{}}
	for _, t := range tenderNames {
		d.Tenders[t] = Totals{}
	}
	if !l.Degraded() {
		rctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
		m, err := l.rdb.HGetAll(rctx, l.k.Daily(day)).Result()
		cancel()
		if err == nil {
			d.Source = "redis"
			for f, v := range m {
				n, _ := strconv.ParseInt(v, 10, 64)
				parts := strings.Split(f, ":") // t:<term>:<field> or x:<tender>:<field>
				if len(parts) != 3 {
					continue
				}
				target := d.Terminals
				if parts[0] == "x" {
					target = d.Tenders
				}
				cur := target[parts[1]]
				setField(&cur, parts[2], n)
				target[parts[1]] = cur
			}
			for _, t := range d.Terminals {
				addTotals(&d.Totals, t)
			}
			return d, nil
		}
		if !redisdb.IsUnavailable(err) {
			return nil, fmt.Errorf("read daily counters: %w", err)
		}
	}
	rows, err := l.j.DayTotalsByGroup(ctx, day)
	if err != nil {
		return nil, errJournal(err)
	}
	d.Source = "journal"
	for _, r := range rows {
		t := d.Terminals[r.TerminalID]
		addTotals(&t, r.Totals)
		d.Terminals[r.TerminalID] = t
		x := d.Tenders[r.Tender]
		addTotals(&x, r.Totals)
		d.Tenders[r.Tender] = x
		addTotals(&d.Totals, r.Totals)
	}
	return d, nil
}

// HourlyStats reads a day's hourly counters.
func (l *Ledger) HourlyStats(ctx context.Context, day string) (*Hourly, error) {
	h := &Hourly{Date: day, Hours: map[string]Totals{}}
	for i := 0; i < 24; i++ {
		h.Hours[fmt.Sprintf("%02d", i)] = Totals{}
	}
	if !l.Degraded() {
		rctx, cancel := context.WithTimeout(ctx, l.cfg.RedisTimeout)
		m, err := l.rdb.HGetAll(rctx, l.k.Hourly(day)).Result()
		cancel()
		if err == nil {
			h.Source = "redis"
			for f, v := range m {
				hour, name, ok := strings.Cut(f, ":")
				if _, known := h.Hours[hour]; !ok || !known {
					continue
				}
				n, _ := strconv.ParseInt(v, 10, 64)
				cur := h.Hours[hour]
				setField(&cur, name, n)
				h.Hours[hour] = cur
			}
			return h, nil
		}
		if !redisdb.IsUnavailable(err) {
			return nil, fmt.Errorf("read hourly counters: %w", err)
		}
	}
	rows, err := l.j.DayTotalsByGroup(ctx, day)
	if err != nil {
		return nil, errJournal(err)
	}
	h.Source = "journal"
	for _, r := range rows {
		cur := h.Hours[r.Hour]
		addTotals(&cur, r.Totals)
		h.Hours[r.Hour] = cur
	}
	return h, nil
}

// Today is the store's business day now.
func (l *Ledger) Today() string {
	d, _ := l.dayHour(l.now())
	return d
}
