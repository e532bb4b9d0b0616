// Package wire is the store ↔ HQ message format over NATS JetStream:
// subjects, headers and the JSON bodies both sides agree on (contract §5).
package wire
