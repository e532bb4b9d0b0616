package hq

import (
	"slices"
	"testing"
)

// TestPendingIsOnlyWhatTheConsumerHasNotRead: a row HQ's database lacks
// is pending only while its message is in the stream above the
// consumer's ack floor; lost from the stream (purged, expired, a stream
// made again below it) or passed by the consumer, it lacks and is
// resent. Without JetStream's answer every row with a sequence waits;
// a row without one (an older store) lacks, as before.
func TestPendingIsOnlyWhatTheConsumerHasNotRead(t *testing.T) {
	read := streamPos{known: true, first: 100, last: 500, ackFloor: 300}
	cases := []struct {
		name string
		pos  streamPos
		seq  uint64
		want bool
	}{
		{"not read yet", read, 301, true},
		{"the stream's last message", read, 500, true},
		{"at the ack floor: read, not stored", read, 300, false},
		{"below the ack floor (a DeleteMsg'd gap passed)", read, 120, false},
		{"purged or expired: below first_seq", read, 99, false},
		{"above last_seq: a stream made again", read, 501, false},
		{"no sequence sent", read, 0, false},
		{"JetStream did not answer", streamPos{}, 42, true},
		{"JetStream did not answer, no sequence", streamPos{}, 0, false},
		{"no stream at all", streamPos{known: true}, 1, false},
		{"a fresh consumer: all unread", streamPos{known: true, first: 1, last: 9}, 1, true},
	}
	for _, c := range cases {
		if got := c.pos.unread(c.seq); got != c.want {
			t.Errorf("%s: unread(%d) = %v, want %v", c.name, c.seq, got, c.want)
		}
	}
	got := read.pendingOf([]string{"1", "2", "3", "4"}, []uint64{400, 400, 200, 0}, []string{"2"})
	if !slices.Equal(got, []string{"1"}) {
		t.Errorf("pendingOf = %v, want [1] (2 held, 3 read, 4 without a sequence)", got)
	}
}
