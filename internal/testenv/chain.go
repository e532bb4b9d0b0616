package testenv

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ChainOptions describe a chain: one NATS and one posedge-hq shared by
// several stores, each store a posedge with its own Redis.
type ChainOptions struct {
	Bin string // dir holding posedge and posedge-hq (BuildBinaries)
	// NATSConf is the nats-server config text (accounts, users,
	// permissions); empty: no authentication. With it, posedge-hq
	// connects as HQUser and each store as StoreUser(store_id).
	NATSConf  string
	HQUser    string // "user:password" of posedge-hq's NATS user
	StoreUser func(storeID string) string
	HQExtra   string // more top-level YAML for hq.yaml (silent_after …)
	API       *APICheck
}

// Chain is HQ's side of a chain on loopback: NATS and posedge-hq as the
// stores started with AddStore share them.
type Chain struct {
	t       testing.TB
	o       ChainOptions
	Dir     string
	NATS    *NATS
	HQ      *Proc
	HQAdmin string
	HQDB    string
	// HQConfig is posedge-hq's config file (for `posedge-hq stores
	// --config`).
	HQConfig string
}

// StartChain starts NATS and posedge-hq and waits for its /healthz.
func StartChain(t testing.TB, o ChainOptions) *Chain {
	t.Helper()
	c := &Chain{t: t, o: o, Dir: t.TempDir()}
	if o.NATSConf != "" {
		c.NATS = StartNATSWithConfig(t, o.NATSConf)
	} else {
		c.NATS = StartNATS(t)
	}
	c.HQDB = filepath.Join(c.Dir, "hq.db")
	c.HQAdmin = fmt.Sprintf("127.0.0.1:%d", FreePort(t))
	c.HQConfig = filepath.Join(c.Dir, "hq.yaml")
	body := fmt.Sprintf("nats_url: %q\ndatabase: %q\nadmin:\n  listen: %q\n%s",
		c.natsURL(o.HQUser), "sqlite://"+c.HQDB, c.HQAdmin, o.HQExtra)
	if err := os.WriteFile(c.HQConfig, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	c.HQ = &Proc{Name: "posedge-hq", Args: []string{filepath.Join(o.Bin, "posedge-hq"), "run", "--config", c.HQConfig},
		Log: filepath.Join(c.Dir, "hq.log")}
	c.HQ.Start(t)
	t.Cleanup(func() {
		c.HQ.Kill()
		if t.Failed() {
			t.Logf("--- posedge-hq log tail:\n%s", c.HQ.Tail(4000))
		}
	})
	WaitFor(t, 30*time.Second, "posedge-hq /healthz", func() bool {
		if !c.HQ.Running() {
			t.Fatalf("posedge-hq exited:\n%s", c.HQ.Tail(3000))
		}
		return healthy("http://" + c.HQAdmin + "/healthz")
	})
	return c
}

// natsURL is the NATS URL with userinfo ("user:password"; "" none).
func (c *Chain) natsURL(userinfo string) string {
	if userinfo == "" {
		return c.NATS.URL()
	}
	return fmt.Sprintf("nats://%s@127.0.0.1:%d", userinfo, c.NATS.Port)
}

// storeURL is the NATS URL store id connects with.
func (c *Chain) storeURL(id string) string {
	if c.o.StoreUser == nil {
		return c.NATS.URL()
	}
	return c.natsURL(c.o.StoreUser(id))
}

// AddStore starts store id's posedge (its own Redis, a single node) on the
// chain's NATS, reporting to the chain's posedge-hq. o.Env is passed to
// the posedge process (test-only knobs).
func (c *Chain) AddStore(id string, o StoreOptions) *Store {
	c.t.Helper()
	o.Bin, o.chain, o.StoreID = c.o.Bin, c, id
	if o.API == nil {
		o.API = c.o.API
	}
	return StartStore(c.t, o)
}

// healthy reports whether GET url answers 200.
func healthy(url string) bool {
	r, err := http.Get(url)
	if err != nil {
		return false
	}
	r.Body.Close()
	return r.StatusCode == http.StatusOK
}
