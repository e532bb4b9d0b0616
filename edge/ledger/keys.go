package ledger

import (
	"strconv"
	"strings"
)

// Redis key names: this file is the one place that knows them (the Lua
// scripts in lua/ take them as KEYS). Every key carries the store as a
// hash tag so a store's keys can live on one Redis Cluster slot.
type keys struct{ p string }

func newKeys(store string) keys { return keys{p: "pe:{" + store + "}:"} }

func (k keys) idem(term, key string) string { return k.p + "idem:" + term + ":" + key }
func (k keys) seq() string                  { return k.p + "seq" }
func (k keys) daily(day string) string      { return k.p + "daily:" + day }
func (k keys) hourly(day string) string     { return k.p + "hourly:" + day }
func (k keys) token(tok string) string      { return k.p + "token:" + tok }
func (k keys) refunded(flow string) string  { return k.p + "refunded:" + flow }
func (k keys) item(barcode string) string   { return k.p + "item:" + barcode }
func (k keys) adjustment(key string) string { return k.p + "adj:" + key }
func (k keys) lock(job string) string       { return k.p + "lock:" + job } // edge/lock adds ":fence"
func (k keys) alive() string                { return k.p + "alive" }       // the instance id of the daemon that pinged last
func (k keys) repaired() string             { return k.p + "repaired" }    // set by the last repair; gone when Redis lost its data
// reapplied: the resume mark of a node's re-apply (repair.go, reapplyFrom).
func (k keys) reapplied(node int) string { return k.p + "reapplied:" + strconv.Itoa(node) }

// idemScan is the SCAN pattern of every idempotency record; idemOf reads
// the terminal and key back from a record's key.
func (k keys) idemScan() string { return k.p + "idem:*" }

func (k keys) idemOf(key string) (term, idem string, ok bool) {
	rest, ok := strings.CutPrefix(key, k.p+"idem:")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, ":")
}
