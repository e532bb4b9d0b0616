// Package bench is `make bench`: every performance figure of posedge, measured against its raw dependency in
// the same run on a whole store on loopback (its tests are the harness; `make test` runs it small, as a smoke).
package bench
