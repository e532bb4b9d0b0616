package testenv_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/posedge/posedge/internal/testenv"
)

// The HQ fault tests' PostgreSQL syncs its commits; the others' does not.
func TestPostgresFsyncSettings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(testing.TB) *testenv.Postgres
		want  string
	}{
		{"durable", testenv.StartPostgresDurable, "on"},
		{"fast", testenv.StartPostgres, "off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := tc.start(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			conn, err := pgx.Connect(ctx, pg.URL())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close(ctx)
			for _, setting := range []string{"fsync", "full_page_writes"} {
				var v string
				if err := conn.QueryRow(ctx, "SHOW "+setting).Scan(&v); err != nil {
					t.Fatal(err)
				}
				if v != tc.want {
					t.Errorf("%s = %s, want %s", setting, v, tc.want)
				}
			}
		})
	}
}
