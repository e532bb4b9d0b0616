// Package chainsim simulates a chain of stores for HQ tests and benchmarks:
// N journals filled directly with a day of sales and refunds, replayed at once.
package chainsim
