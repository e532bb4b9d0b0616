// Package privfile keeps a database file and its SQLite companions
// readable by their owner only: created 0600, tightened if found wider.
package privfile
