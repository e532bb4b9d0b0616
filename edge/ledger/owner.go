package ledger

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"
)

// The owner an idempotency record names is the daemon instance that ran
// its script: "n<node_id>-<16 hex digits>", random per start. The node
// says which daemon of a store wrote it when two share one Redis (their
// node_ids differ, CONTRACT.md): a PROCESSING record of this node under
// another owner is a dead process's, since a node runs one process at a
// time, while another node's may be a sale that daemon has in flight.
func instanceOwner(node int) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "n" + strconv.Itoa(node) + "-" + hex.EncodeToString(b[:])
}

// ownerNode is the node_id an owner names; false for an owner written
// before owners named their node (a bare hex id) or not of that form.
func ownerNode(owner string) (int, bool) {
	n, rest, ok := strings.Cut(owner, "-")
	if !ok || len(n) < 2 || n[0] != 'n' || len(rest) != 16 {
		return 0, false
	}
	node, err := strconv.Atoi(n[1:])
	if err != nil || node < 0 || strconv.Itoa(node) != n[1:] {
		return 0, false
	}
	return node, true
}

// otherNode tells whether owner names a node other than this ledger's:
// a record another daemon of the store wrote (two on one Redis).
func (l *Ledger) otherNode(owner string) bool {
	node, ok := ownerNode(owner)
	return ok && node != l.cfg.NodeID
}
