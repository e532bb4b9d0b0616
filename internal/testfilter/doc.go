// Command testfilter reads `go test -json` on stdin and prints progress a
// person can follow during a long `make test`: one line per finished
// top-level test (PASS with its time, SKIP with its reason), one per
// package, and the full output of every failed test and package. The e2e
// package is otherwise silent for minutes. Exits 1 when anything failed.
package main
