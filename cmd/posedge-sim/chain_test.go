package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/wire"
)

// TestChainReplaysEveryStoreOnce: `posedge-sim chain` at a tiny size
// against a real JetStream: every store's day lands in the stream once,
// with its manifests, and the summary says so.
func TestChainReplaysEveryStoreOnce(t *testing.T) {
	nt := testenv.StartNATS(t)
	nc, err := nats.Connect(nt.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: wire.DefaultStream, Subjects: []string{wire.DefaultSubjectPrefix + ".>"},
		Storage: jetstream.FileStorage, Duplicates: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	args := []string{"chain", "--nats-url", nt.URL(), "--stores", "3", "--txns", "40", "--refund-every", "10", "--terminals", "2",
		"--jitter", "200ms", "--sync-every", "20ms", "--batch-size", "7", "--progress-every", "100ms", "--day", "2026-11-30"}
	if err := run(ctx, args, &out); err != nil {
		t.Fatalf("posedge-sim chain: %v\n%s", err, out.String())
	}
	for _, line := range []string{"stores 3\n", "transactions 120\n", "sales 108\n", "refunds 12\n", "manifests 6\n", "quarantined 0\n"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("summary lacks %q:\n%s", line, out.String())
		}
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(wire.DefaultSubjectPrefix+".>"))
	if err != nil {
		t.Fatal(err)
	}
	txns, manifests := uint64(0), uint64(0)
	for subj, n := range info.State.Subjects {
		switch {
		case strings.HasSuffix(subj, ".manifest"):
			manifests += n
		case strings.HasSuffix(subj, ".heartbeat"):
			// A store idle for a sync interval says it is alive (more
			// often on a slow machine or under -race): not a transaction.
		default:
			txns += n
		}
	}
	// Each transaction once (the stream's duplicate window drops a resend).
	if txns != 120 || manifests != 6 {
		t.Fatalf("stream holds %d transactions and %d manifests (by subject %v), want 120 and 6", txns, manifests, info.State.Subjects)
	}
}

func TestChainRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"chain", "--stores", "0"},
		{"chain", "--txns", "-1"},
		{"chain", "--day", "30.11.2026"},
		{"chain", "extra"},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), args, &out); err == nil {
			t.Errorf("%v: accepted", args)
		}
	}
}
