// Package jsonhttp writes the JSON answers of every posedge listener —
// terminal, admin and posedge-hq's — and the contract's error body.
package jsonhttp
