package e2e

import (
	"fmt"
	"os"
	"testing"

	"github.com/posedge/posedge/internal/testenv"
)

// bin holds the posedge and posedge-hq binaries built once for this run.
var bin string

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
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func startStore(t *testing.T, o testenv.StoreOptions) *testenv.Store {
	t.Helper()
	o.Bin = bin
	return testenv.StartStore(t, o)
}
