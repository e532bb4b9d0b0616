package ledger

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

func TestCompletionsFailed(t *testing.T) {
	marks := func(prefix string, n int) []completion {
		cs := make([]completion, n)
		for i := range cs {
			cs[i] = completion{"T01", fmt.Sprintf("%s%05d", prefix, i)}
		}
		return cs
	}
	tests := []struct {
		name        string
		added       int // new marks
		failed      int
		wait        time.Duration // before a run takes them
		wantDropped int
		wantFlushed int    // sent on their own meanwhile
		wantTaken   int    // by the run
		wantFirst   string // the first of those
		wantLeft    int    // for the run after it
	}{
		{"failed marks ride in the next run, after the new ones", 2, 3, 0, 0, 0, 5, "n00000", 0},
		{"not every completeDelay while no run comes", 0, 3, 10 * completeDelay, 0, 0, 3, "r00000", 0},
		{"after retryDelay they go on their own", 0, 3, retryDelay + 300*time.Millisecond, 0, 3, 0, "", 0},
		{"a run carries completeMax at most", 0, completeMax + 44, 0, 0, 0, completeMax, "r00000", 44},
		{"beyond retryMax the oldest go", 0, retryMax + 10, 0, 10, 0, completeMax, "r00010", completeMax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			flushed := 0
			c := &completions{flush: func(cs []completion) { mu.Lock(); flushed += len(cs); mu.Unlock() }}
			for _, m := range marks("n", tt.added) {
				c.add(m.term, m.key)
			}
			dropped := c.failed(marks("r", tt.failed))
			time.Sleep(tt.wait)
			mu.Lock()
			f := flushed
			mu.Unlock()
			taken := c.take()
			left := len(c.take())
			first := ""
			if len(taken) > 0 {
				first = taken[0].key
			}
			if dropped != tt.wantDropped || f != tt.wantFlushed || len(taken) != tt.wantTaken || first != tt.wantFirst || left != tt.wantLeft {
				t.Errorf("dropped %d, flushed %d, taken %d starting %q, then %d; want %d, %d, %d starting %q, then %d",
					dropped, f, len(taken), first, left, tt.wantDropped, tt.wantFlushed, tt.wantTaken, tt.wantFirst, tt.wantLeft)
			}
		})
	}
}

// replyErr is a Redis error reply as go-redis hands it over: a type with
// a RedisError method.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

func TestMarkFate(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want markOutcome
	}{
		{"marked", nil, markDone},
		{"no answer value", redis.Nil, markDone},
		{"client closed: shutting down", redis.ErrClosed, markDropped},
		{"timed out", context.DeadlineExceeded, markAgain},
		{"link reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, markAgain},
		{"link closed mid-answer", io.EOF, markAgain},
		{"a key of another type", replyErr("WRONGTYPE Operation against a key holding the wrong kind of value"), markRefused},
		{"refused, wrapped", fmt.Errorf("mark: %w", replyErr("ERR wrong number of arguments")), markRefused},
		{"a replica now", replyErr("READONLY You can't write against a read only replica."), markAgain},
		{"loading", replyErr("LOADING Redis is loading the dataset in memory"), markAgain},
		{"a script running long", replyErr("BUSY Redis is busy running a script."), markAgain},
		{"no good replicas", replyErr("NOREPLICAS Not enough good replicas to write."), markAgain},
		{"out of memory", replyErr("OOM command not allowed when used memory > 'maxmemory'."), markAgain},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := markFate(tt.err); got != tt.want {
				t.Errorf("markFate(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}
