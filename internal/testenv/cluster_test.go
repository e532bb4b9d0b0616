package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A replicated stream keeps every acknowledged message through its
// leader's kill and a follower's freeze, and a restarted node catches up.
func TestNATSClusterKillFreezeRestart(t *testing.T) {
	bin, err := BuildNATSServer(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := StartNATSCluster(t, bin, 3)
	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
		// A frozen server keeps the socket open: only missed pings tell.
		nats.PingInterval(time.Second), nats.MaxPingsOutstanding(2))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var st jetstream.Stream
	WaitFor(t, time.Minute, "an R3 stream created", func() bool {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		st, err = js.CreateStream(cctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Replicas: 3, Storage: jetstream.FileStorage})
		return err == nil
	})
	published := 0
	publish := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			id := fmt.Sprintf("m%d", published)
			WaitFor(t, time.Minute, "publish "+id+" acked", func() bool {
				pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				_, err := js.Publish(pctx, "s.x", []byte(id), jetstream.WithMsgID(id))
				return err == nil
			})
			published++
		}
	}
	leader := func() string {
		var name string
		WaitFor(t, time.Minute, "a stream leader", func() bool {
			ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			info, err := st.Info(ictx)
			if err != nil || info.Cluster == nil {
				return false
			}
			name = info.Cluster.Leader
			return name != ""
		})
		return name
	}
	publish(50)

	killed := c.Node(leader())
	killed.Kill()
	publish(50)
	if l := leader(); l == killed.Name {
		t.Fatalf("stream leader is still the killed node %s", l)
	}

	current := func() bool {
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		info, err := st.Info(ictx)
		if err != nil || info.Cluster == nil || info.State.Msgs != uint64(published) || len(info.Cluster.Replicas) != 2 {
			return false
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current || r.Offline {
				return false
			}
		}
		return true
	}
	killed.Start()
	WaitFor(t, 2*time.Minute, "the restarted node to catch up", current)

	var frozen *NATSNode
	for _, n := range c.Nodes {
		if n != killed && n.Name != leader() {
			frozen = n
		}
	}
	frozen.Freeze()
	WaitFor(t, 10*time.Second, frozen.Name+" stopped", frozen.frozen)
	publish(50) // the leader and the restarted node are a quorum
	frozen.Thaw()
	c.WaitReady(time.Minute)

	WaitFor(t, 2*time.Minute, "every replica current with all messages", current)
}
