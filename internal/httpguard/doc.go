// Package httpguard is what every posedge listener does before a handler
// runs: refuse unclean paths, limit failed bearer authentications, serve
// with timeouts and TLS 1.2 or later.
package httpguard
