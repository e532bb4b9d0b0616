package hqdb

import "testing"

// The shared SQL is written in SQLite's ? spelling; PostgreSQL numbers
// its placeholders in the order they stand.
func TestRebind(t *testing.T) {
	tests := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"WHERE store_id = ?", "WHERE store_id = $1"},
		{"VALUES (?, ?, ?)", "VALUES ($1, $2, $3)"},
		{"a = ? AND b = ? ORDER BY c", "a = $1 AND b = $2 ORDER BY c"},
		{"(?, ?) ON CONFLICT DO NOTHING", "($1, $2) ON CONFLICT DO NOTHING"},
	}
	for _, tt := range tests {
		if got := Rebind(tt.in); got != tt.want {
			t.Errorf("Rebind(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
