// Package ratelimit decides terminal requests against the store, terminal and action
// sliding windows in one Redis script call, with promotions and a local fallback.
package ratelimit
