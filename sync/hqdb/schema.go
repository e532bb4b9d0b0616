package hqdb

import (
	"fmt"
	"strings"
)

// ColumnTypes are the column types a backend spells its own way; the
// tables are otherwise the same on every backend (Schema).
type ColumnTypes struct {
	Int      string // a 64-bit integer
	Time     string // a timestamp, NOT NULL
	NullTime string // a timestamp that may be NULL (a store heard from only by heartbeat)
	JSON     string // a message body
}

// schemaDDL is every table of HQ's database, with the backend's types
// left as {int}, {time}, {time?} and {json}.
var schemaDDL = []string{
	`CREATE TABLE IF NOT EXISTS hq_schema (version INTEGER NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS transactions (
		store_id      TEXT NOT NULL,
		flow_no       TEXT NOT NULL,
		terminal_id   TEXT NOT NULL,
		kind          TEXT NOT NULL,
		total_cents   {int} NOT NULL,
		created_at    {time} NOT NULL,
		body          {json} NOT NULL,
		received_at   {time} NOT NULL,
		business_date TEXT NOT NULL,
		PRIMARY KEY (store_id, flow_no)
	)`,
	`CREATE TABLE IF NOT EXISTS day_totals (
		store_id      TEXT NOT NULL,
		terminal_id   TEXT NOT NULL,
		business_date TEXT NOT NULL,
		sales         {int} NOT NULL,
		sales_cents   {int} NOT NULL,
		refunds       {int} NOT NULL,
		refund_cents  {int} NOT NULL,
		PRIMARY KEY (store_id, terminal_id, business_date)
	)`,
	`CREATE TABLE IF NOT EXISTS conflicts (
		store_id    TEXT NOT NULL,
		flow_no     TEXT NOT NULL,
		body_sha256 TEXT NOT NULL,
		terminal_id TEXT NOT NULL,
		kind        TEXT NOT NULL,
		total_cents {int} NOT NULL,
		created_at  {time} NOT NULL,
		body        {json} NOT NULL,
		received_at {time} NOT NULL,
		PRIMARY KEY (store_id, flow_no, body_sha256)
	)`,
	// A quarantined body is kept as text: it may not be valid JSON.
	`CREATE TABLE IF NOT EXISTS quarantine (
		store_id    TEXT NOT NULL,
		flow_no     TEXT NOT NULL,
		body_sha256 TEXT NOT NULL,
		reason      TEXT NOT NULL,
		detail      TEXT NOT NULL,
		body        TEXT NOT NULL,
		received_at {time} NOT NULL,
		PRIMARY KEY (store_id, flow_no, body_sha256)
	)`,
	`CREATE TABLE IF NOT EXISTS manifests (
		store_id      TEXT NOT NULL,
		terminal_id   TEXT NOT NULL,
		date          TEXT NOT NULL,
		sales         {int} NOT NULL,
		sales_cents   {int} NOT NULL,
		refunds       {int} NOT NULL,
		refund_cents  {int} NOT NULL,
		first_flow_no TEXT NOT NULL,
		last_flow_no  TEXT NOT NULL,
		sent_at       {time} NOT NULL,
		received_at   {time} NOT NULL,
		body          {json} NOT NULL,
		PRIMARY KEY (store_id, terminal_id, date)
	)`,
	`CREATE TABLE IF NOT EXISTS heartbeats (
		store_id      TEXT NOT NULL PRIMARY KEY,
		sent_at       {time} NOT NULL,
		received_at   {time} NOT NULL,
		backlog       {int} NOT NULL,
		oldest_unsent TEXT NOT NULL,
		version       TEXT NOT NULL,
		body          {json} NOT NULL
	)`,
	`CREATE TABLE IF NOT EXISTS stock_adjustments (
		store_id      TEXT NOT NULL,
		adjustment_id TEXT NOT NULL,
		barcode       TEXT NOT NULL,
		delta         {int} NOT NULL,
		reason        TEXT NOT NULL,
		created_at    {time} NOT NULL,
		body          {json} NOT NULL,
		received_at   {time} NOT NULL,
		PRIMARY KEY (store_id, adjustment_id)
	)`,
	`CREATE TABLE IF NOT EXISTS stores (
		store_id         TEXT NOT NULL PRIMARY KEY,
		txn_count        {int} NOT NULL,
		max_flow_no      TEXT NOT NULL,
		last_created_at  {time?},
		last_received_at {time?},
		last_seen_at     {time} NOT NULL
	)`,
}

// Schema is the CREATE TABLE statements of HQ's database in a backend's
// column types, in the order to run them.
func Schema(t ColumnTypes) []string {
	r := strings.NewReplacer("{int}", t.Int, "{time}", t.Time, "{time?}", t.NullTime, "{json}", t.JSON)
	out := make([]string, len(schemaDDL))
	for i, q := range schemaDDL {
		out[i] = r.Replace(q)
	}
	return out
}

// CheckSchemaVersion decides what to do with the version a database
// holds: record ours when it holds none (found false), refuse one newer
// than this posedge-hq.
func CheckSchemaVersion(stored int, found bool, readErr error) (record bool, err error) {
	switch {
	case readErr != nil:
		return false, fmt.Errorf("read schema version: %w", readErr)
	case !found:
		return true, nil
	case stored > SchemaVersion:
		return false, fmt.Errorf("database schema version %d is newer than this posedge-hq (version %d): upgrade posedge-hq", stored, SchemaVersion)
	}
	return false, nil
}
