// Package e2e holds end-to-end tests: whole stores (Redis Sentinel, NATS,
// posedge-hq, posedge) as real processes, driven only through the contract.
package e2e
