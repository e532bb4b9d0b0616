package e2e

import (
	"testing"

	"github.com/posedge/posedge/internal/testenv"
)

// bin holds the posedge and posedge-hq binaries built once for this run.
var bin string

// api checks every store's HTTP exchanges against docs/openapi.yaml,
// loaded once for the run; its counts are printed at the end.
var api *testenv.APICheck

func TestMain(m *testing.M) {
	testenv.MainWithBinaries(m, "e2e", func(dir string, check *testenv.APICheck) { bin, api = dir, check })
}

func startStore(t *testing.T, o testenv.StoreOptions) *testenv.Store {
	t.Helper()
	o.Bin = bin
	o.API = api
	return testenv.StartStore(t, o)
}
