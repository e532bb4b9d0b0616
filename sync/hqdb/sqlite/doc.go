// Package sqlite is posedge-hq's SQLite backend of hqdb.Store: one file
// in WAL mode, one writer connection with its statements prepared once,
// transactions stored with prepared multi-row inserts.
package sqlite
