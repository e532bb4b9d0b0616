package businessday

import "time"

// Layout is the business day's form, YYYYMMDD, as Go's time layout.
const Layout = "20060102"

// Of is the business day of t in the store's time zone loc: the calendar
// date there, so a sale at 00:30 local time counts on the new day
// whatever UTC says.
func Of(t time.Time, loc *time.Location) string { return t.In(loc).Format(Layout) }

// DayHour is the business day of t in loc and its hour there ("00"-"23"),
// as the day's and hour's counters are keyed.
func DayHour(t time.Time, loc *time.Location) (day, hour string) {
	lt := t.In(loc)
	return lt.Format(Layout), lt.Format("15")
}

// Written is the business day of a timestamp the edge wrote in the
// store's zone (RFC 3339 with the store's offset, as occurred_at and
// created_at are): the date the timestamp itself carries. HQ, which does
// not know the store's zone, reads the day this way.
func Written(t time.Time) string { return t.Format(Layout) }

// Valid reports whether s is a business day: eight digits, a real date.
func Valid(s string) bool {
	if len(s) != len(Layout) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	_, err := time.Parse(Layout, s)
	return err == nil
}
