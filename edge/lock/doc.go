// Package lock is a Redis lock for store-wide singleton jobs (seed 002):
// an owner token, compare-and-delete and compare-and-extend, and a fencing
// number that the Lua scripts a holder runs check before they write.
package lock
