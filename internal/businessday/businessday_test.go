package businessday

import (
	"testing"
	"time"
)

func TestOf(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 31, 15, 30, 0, 0, time.UTC)
	tests := []struct {
		name      string
		loc       *time.Location
		day, hour string
	}{
		{"UTC", time.UTC, "20260331", "15"},
		{"ahead: the next day", tokyo, "20260401", "00"},
		{"behind: same day, earlier hour", ny, "20260331", "11"},
	}
	for _, tt := range tests {
		d, h := DayHour(at, tt.loc)
		if d != tt.day || h != tt.hour || Of(at, tt.loc) != tt.day {
			t.Errorf("%s: %s %s (Of %s), want %s %s", tt.name, d, h, Of(at, tt.loc), tt.day, tt.hour)
		}
		// HQ reads the same day back from the timestamp the edge wrote.
		written, err := time.Parse(time.RFC3339Nano, at.In(tt.loc).Format(time.RFC3339Nano))
		if err != nil {
			t.Fatal(err)
		}
		if got := Written(written); got != tt.day {
			t.Errorf("%s: Written %s, want %s", tt.name, got, tt.day)
		}
	}
}

func TestValid(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{
		{"20260331", true},
		{"20240229", true},
		{"20250229", false}, // not a leap year
		{"20261301", false},
		{"2026033", false},
		{"202603311", false},
		{"2026-3-1", false},
		{"+2026033", false},
		{"", false},
		{"2026x", false},
	}
	for _, tt := range tests {
		if got := Valid(tt.s); got != tt.want {
			t.Errorf("Valid(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}
