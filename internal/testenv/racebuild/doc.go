// Package racebuild tells a test whether it was built with -race, so a
// test whose load is sized for throughput can scale it down under the
// race detector (which checks synchronisation, not speed) while keeping
// its code paths and assertions.
package racebuild
