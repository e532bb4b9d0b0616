// Package golden compares a test's long output (a status screen, a fleet
// table, what check-config prints) with a file under testdata, and
// rewrites the file under -update, as node_exporter's collector/fixtures.
package golden
