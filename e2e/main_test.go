package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/posedge/posedge/internal/testenv"
)

// bin holds the posedge and posedge-hq binaries built once for this run.
var bin string

// api checks every store's HTTP exchanges against docs/openapi.yaml,
// loaded once for the run; its counts are printed at the end.
var api *testenv.APICheck

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "posedge-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := testenv.BuildBinaries(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = dir
	if api, err = testenv.NewAPICheck(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	fmt.Printf("e2e: %s\n", api.Counts)
	os.RemoveAll(dir)
	os.Exit(code)
}

func startStore(t *testing.T, o testenv.StoreOptions) *testenv.Store {
	t.Helper()
	o.Bin = bin
	o.API = api
	return testenv.StartStore(t, o)
}
