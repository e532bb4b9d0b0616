// Package journal is the store's durable record of every sale and refund:
// SQLite in WAL mode with synchronous=FULL, one writer, group commit.
// It is the source of truth Redis is rebuilt from and the outbox to HQ.
package journal
