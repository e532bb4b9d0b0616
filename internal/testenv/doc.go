// Package testenv starts the real servers posedge's tests run against —
// a Redis Sentinel topology, a NATS server with JetStream, PostgreSQL —
// on free loopback ports in a test's temp dir, and tears them down.
package testenv
