// Package hqlink is the store's one connection to HQ's NATS: the options
// every use of it shares (name, the per-store reply prefix, credentials,
// TLS, reconnect for ever, pings) and the connection of the moment, which
// the replay (sales, manifests, heartbeats, stock adjustments, delivery
// confirmations) dials and the catalog watch borrows.
package hqlink
