package ledger

import (
	"sync"
	"testing"
	"time"
)

func TestCompletions(t *testing.T) {
	tests := []struct {
		name      string
		add       int
		takeAfter bool // a run takes them before the timer
		wantTaken int
		wantFlush int // marks flushed on their own
	}{
		{"a run carries them", 3, true, 3, 0},
		{"no run comes: the timer sends them", 3, false, 0, 3},
		{"completeMax at once: sent without waiting", completeMax, false, 0, completeMax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			flushed := 0
			c := &completions{flush: func(cs []completion) { mu.Lock(); flushed += len(cs); mu.Unlock() }}
			for i := range tt.add {
				c.add("T01", string(rune('a'+i%26)))
			}
			taken := 0
			if tt.takeAfter {
				taken = len(c.take())
			}
			time.Sleep(10 * completeDelay)
			mu.Lock()
			defer mu.Unlock()
			if taken != tt.wantTaken || flushed != tt.wantFlush {
				t.Errorf("taken %d, flushed %d; want %d, %d", taken, flushed, tt.wantTaken, tt.wantFlush)
			}
		})
	}
}
