// Package postgres is posedge-hq's PostgreSQL backend of hqdb.Store:
// any number of posedge-hq processes share one database; a batch is
// stored in one round trip when it can (pgingest.go) and the careful way
// otherwise.
package postgres
