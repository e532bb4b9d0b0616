// Package natsurl checks and redacts a nats_url setting: one NATS server
// or a comma-separated list of a cluster's servers.
package natsurl
