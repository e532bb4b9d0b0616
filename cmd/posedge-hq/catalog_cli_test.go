package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/posedge/posedge/internal/testenv"
)

// The import command as an HQ engineer runs it: a summary that says what
// was written, an unchanged list that writes no revision, and a malformed
// list refused by line number with exit 1.
func TestCatalogImportCommand(t *testing.T) {
	n := testenv.StartNATS(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "hq.yaml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("nats_url: %q\ndatabase: %q\n", n.URL(), "sqlite://"+filepath.Join(dir, "hq.db"))), 0o600); err != nil {
		t.Fatal(err)
	}
	csv := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	list := csv("list.csv", "barcode,name,price_cents,active\nA1,Milk,350,true\nA2,Bread,220,true\n")
	tests := []struct {
		name     string
		file     string
		code     int
		out, err string
	}{
		{"first import writes every row", list, 0, "2 rows, 2 written, 0 unchanged, last revision 2", ""},
		{"the same list writes nothing", list, 0, "2 rows, 0 written, 2 unchanged, no new revision", ""},
		{"a malformed row is named", csv("bad.csv", "A1,Milk,360,true\nA2,Bread,2.20,true\n"), 1, "", "line 2: price_cents"},
	}
	for _, tc := range tests { // in order: each step builds on the bucket the one before left
		code, stdout, stderr := runHQ(t, "catalog", "import", "--config", conf, tc.file)
		if code != tc.code || !strings.Contains(stdout, tc.out) || !strings.Contains(stderr, tc.err) {
			t.Fatalf("%s: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", tc.name, code, stdout, stderr, tc.code, tc.out, tc.err)
		}
	}
	// The refused list changed nothing: importing the good list again
	// still finds every row unchanged (A1 is not at 360).
	if code, out, _ := runHQ(t, "catalog", "import", "--config", conf, list); code != 0 || !strings.Contains(out, "0 written, 2 unchanged") {
		t.Fatalf("after the refused list: exit %d, %s", code, out)
	}
}
