package testenv

import (
	"fmt"
	"os"
	"testing"
)

// MainWithBinaries is the TestMain of a package whose tests drive the
// built daemons: it builds them (BuildBinaries) into a temporary
// directory, loads the API check, hands both to use, runs the tests,
// prints the check's counts after label and exits with the tests' code.
func MainWithBinaries(m *testing.M, label string, use func(bin string, api *APICheck)) {
	dir, err := os.MkdirTemp("", "posedge-"+label+"-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := BuildBinaries(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	api, err := NewAPICheck()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	use(dir, api)
	code := m.Run()
	fmt.Printf("%s: %s\n", label, api.Counts)
	os.RemoveAll(dir)
	os.Exit(code)
}
