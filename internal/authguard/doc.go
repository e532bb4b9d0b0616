// Package authguard limits failed authentications per source address
// (the contract: 10 in 60 s). It knows no HTTP, so the limiter can name
// it without linking the listeners' code; internal/httpguard's bearer
// check and both daemons' admin APIs use the same guard.
package authguard
