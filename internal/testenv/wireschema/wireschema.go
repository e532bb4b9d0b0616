// Package wireschema checks a message body against its JSON Schema in
// docs/wire: the store side's tests (sync/replay) and the end-to-end
// tests read the same schemas the same way, formats asserted.
package wireschema

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Compile compiles docs/wire/<name>.schema.json of the module the test
// runs in, formats asserted; a schema that does not compile fails t.
func Compile(t testing.TB, name string) *jsonschema.Schema {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	sch, err := c.Compile(filepath.Join(root, "docs", "wire", name+".schema.json"))
	if err != nil {
		t.Fatalf("compile the %s schema: %v", name, err)
	}
	return sch
}

// Validate checks one JSON body against sch.
func Validate(sch *jsonschema.Schema, body []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("reading the body as JSON: %w", err)
	}
	return sch.Validate(v)
}

// moduleRoot is the nearest directory above the working directory (a
// test's package directory) that holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding docs/wire: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("finding docs/wire: no go.mod above the working directory")
		}
		dir = up
	}
}
