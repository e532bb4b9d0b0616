// Package ledger is the money path: sales, refunds, batch uploads and
// payment tokens, exact to the cent, checked and applied on Redis in one
// Lua script and journaled before any answer; idempotent by key.
package ledger
