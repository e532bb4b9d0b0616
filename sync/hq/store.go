package hq

import (
	"context"
	"fmt"

	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/hqdb/postgres"
	"github.com/posedge/posedge/sync/hqdb/sqlite"
)

// OpenStore opens (creating the schema if needed) the database a
// `database` URL names.
func OpenStore(ctx context.Context, database string, opts hqdb.StoreOptions) (hqdb.Store, error) {
	u, err := ParseDatabaseURL(database)
	if err != nil {
		return nil, fmt.Errorf("database %q: %w", redactURL(database), err)
	}
	switch u.Kind {
	case SQLite:
		return sqlite.Open(ctx, u.Path, opts)
	default:
		return postgres.Open(ctx, u.URL, opts)
	}
}
