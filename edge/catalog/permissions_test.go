package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/posedge/posedge/internal/testenv"
	"github.com/posedge/posedge/sync/wire"
)

// The catalog watch of a store whose NATS user is the per-store user of
// docs/security.md's two-account template (stores in STORES, the bucket
// in POS), the documented block itself, on a real nats-server: prices
// reach the store; the other store's user can neither read S1's
// changes or replies nor write the bucket. Before the change to direct
// gets and republished changes the watcher used a key-value watch (a
// JetStream consumer), which the STORES account cannot reach: no price
// ever came.
func TestWatchUnderPerStoreTemplate(t *testing.T) {
	n := testenv.StartNATSWithConfig(t, testenv.WithOperator(t, testenv.SecurityTemplateFor(t, "../../docs/security.md", store, "S2")))
	hnc, err := nats.Connect(fmt.Sprintf("nats://%s:pw@127.0.0.1:%d", testenv.OperatorUser, n.Port))
	if err != nil {
		t.Fatal(err)
	}
	defer hnc.Close()
	hjs, _ := jetstream.New(hnc)
	kv, err := hjs.CreateOrUpdateKeyValue(context.Background(), bucketConfig())
	if err != nil {
		t.Fatal(err)
	}
	put := func(key string, price int64) {
		b, _ := json.Marshal(map[string]any{"name": "Apple", "price_cents": price, "active": true})
		if _, err := kv.Put(context.Background(), key, b); err != nil {
			t.Fatal(err)
		}
	}
	put("_all.A", 100)

	s := newStore(t)
	s.start(fmt.Sprintf("nats://%s:pw@127.0.0.1:%d", strings.ToLower(store), n.Port))
	s.waitPrice("A", 100)
	start := time.Now()
	put(store+".A", 120)
	s.waitPrice("A", 120)
	t.Logf("a store price under the template at the store after %v", time.Since(start).Round(time.Millisecond))

	// The template still keeps one store off another's replies (S2's
	// user cannot read S1's inbox) and off the bucket's writes (S2
	// cannot set a price, for itself or for every store).
	var errs []error
	onErr := func(_ *nats.Conn, _ *nats.Subscription, err error) { errs = append(errs, err) }
	nc2, err := nats.Connect(fmt.Sprintf("nats://s2:pw@127.0.0.1:%d", n.Port), nats.ErrorHandler(onErr))
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	sub, err := nc2.SubscribeSync("_INBOX." + store + ".>")
	if err != nil {
		t.Fatal(err)
	}
	live, err := nc2.SubscribeSync(wire.CatalogLiveSubject(bucket) + "." + store + ".>")
	if err != nil {
		t.Fatal(err)
	}
	nc2.Flush()
	put(store+".A", 130)
	s.waitPrice("A", 130)
	for _, sub := range []*nats.Subscription{sub, live} {
		if m, err := sub.NextMsg(300 * time.Millisecond); err == nil {
			t.Errorf("S2 read S1's catalog delivery on %s", m.Subject)
		}
	}
	forged, _ := json.Marshal(map[string]any{"name": "Apple", "price_cents": 1, "active": true})
	for _, subj := range []string{"$KV.POS_CATALOG._all.A", "$KV.POS_CATALOG.S2.A"} {
		if err := nc2.Publish(subj, forged); err != nil {
			t.Fatal(err)
		}
	}
	nc2.Flush()
	for _, key := range []string{"_all.A", "S2.A"} {
		if e, err := kv.Get(context.Background(), key); key == "S2.A" && err == nil || key == "_all.A" && (err != nil || e.Revision() != 1) {
			t.Errorf("a store user wrote the catalog key %s", key)
		}
	}
}
