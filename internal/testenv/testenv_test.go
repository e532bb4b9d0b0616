package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

func TestRedisTopologyFailsOver(t *testing.T) {
	r := StartRedis(t, RedisOptions{})
	ctx := context.Background()
	m := r.Master()
	if err := m.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if r.MasterIndex() != 0 {
		t.Fatalf("master index %d, want 0", r.MasterIndex())
	}
	r.KillNode(0)
	WaitFor(t, 30*time.Second, "a replica promoted", func() bool {
		i := r.MasterIndex()
		return i > 0
	})
	WaitFor(t, 10*time.Second, "writes through the failover client", func() bool {
		return m.Set(ctx, "k2", "v", 0).Err() == nil
	})
}

func TestNATSRestartKeepsStream(t *testing.T) {
	n := StartNATS(t)
	nc, err := nats.Connect(n.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := nc.JetStream()
	if _, err := js.AddStream(&nats.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: nats.FileStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish("s.a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	n.Stop()
	n.Start()
	WaitFor(t, 10*time.Second, "reconnect", nc.IsConnected)
	info, err := js.StreamInfo("S")
	if err != nil || info.State.Msgs != 1 {
		t.Fatalf("stream after restart: %+v %v", info, err)
	}
}
