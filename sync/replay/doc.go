// Package replay sends the journal's sales and refunds to HQ over NATS
// JetStream in throttled, acknowledged batches, and resumes after any outage.
package replay
