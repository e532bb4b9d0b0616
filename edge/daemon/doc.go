// Package daemon wires posedge together for `posedge run` and the service:
// Redis through the Sentinels, the journal, ledger, limiter, HQ replay and
// the two HTTP listeners, with start-up recovery before /readyz turns 200.
package daemon
