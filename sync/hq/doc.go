// Package hq is posedge-hq: it stores every transaction the stores replay
// over NATS JetStream exactly once, in SQLite or PostgreSQL (contract §5).
package hq
