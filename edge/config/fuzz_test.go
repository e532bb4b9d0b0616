package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// FuzzParse: whatever parses and validates is written back as YAML and
// parses again to the same config (nothing the daemon runs with depends
// on how the operator spelled it); every refusal names its key, or is a
// YAML error from the parser.
func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	f.Add([]byte(minimal + "max_sale_cents: 1000000000000000\n"))
	f.Add([]byte(minimal + "max_sale_cents: 1000000000000001\n"))
	f.Add([]byte(minimal + "max_sale_cents: -1\n"))
	f.Add([]byte(minimal + "max_sale_cents: 9223372036854775808\n"))
	f.Add([]byte(minimal + "max_sale_cents: 1e11\n"))
	f.Add([]byte(minimal + "limits: {fallback_fraction: .nan}\n"))
	f.Add([]byte(minimal + "limits:\n  actions:\n    pay: {limit: 2, window: \"1500ms\"}\n"))
	f.Add([]byte(minimal + "journal: {path: \"/x\", retention: \"48h\", max_bytes: 1048576, quota_bytes: 1}\n"))
	f.Add([]byte("store_id: [\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := Parse(in)
		if err != nil {
			var ve ValidationError
			if errors.As(err, &ve) {
				if len(ve) == 0 {
					t.Fatal("an empty ValidationError")
				}
				for _, fe := range ve {
					if fe.Key == "" || !strings.Contains(err.Error(), fe.Key+": ") {
						t.Fatalf("a problem without its key: %q in %v", fe.Key, err)
					}
				}
			} else if !strings.HasPrefix(err.Error(), "parse: ") || len(err.Error()) <= len("parse: ") {
				t.Fatalf("an error neither a ValidationError nor a YAML error: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("Parse returned a config that does not validate: %v", err)
		}
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatalf("marshal a valid config: %v", err)
		}
		c2, err := Parse(out)
		if err != nil {
			t.Fatalf("the valid config written back does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(c, c2) {
			t.Fatalf("round trip changed the config:\n%+v\n%+v\nYAML:\n%s", c, c2, out)
		}
	})
}

// TestYAMLLibraryPanicIsANamedError: goccy/go-yaml v1.19.2 dereferences
// nil (ast.(*ArrayNodeIter).Len) on these files, a bare "!" where the
// terminals list belongs; posedge check-config and posedge run died with
// the panic. It is an error naming the file and the line now
// (testdata/fuzz/FuzzParse keeps the three-line input too; the upstream
// report, docs/upstream/goccy-go-yaml-nil-deref.md, has the two-line one).
func TestYAMLLibraryPanicIsANamedError(t *testing.T) {
	for _, tc := range []struct {
		name, in, line string
	}{
		{"as found by FuzzParse", "store_id: \"S1\"\nterminals:\n !\n", "line 3: "},
		{"minimal, as reported upstream", "terminals:\n !\n", "line 2: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "posedge.yaml")
			if err := os.WriteFile(path, []byte(tc.in), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil {
				t.Fatal("a malformed file loaded")
			}
			want := path + ": parse: " + tc.line
			if !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("error = %q, want it to start with %q", err, want)
			}
			if _, err := Parse([]byte(tc.in)); err == nil || !strings.HasPrefix(err.Error(), "parse: "+tc.line) {
				t.Fatalf("Parse: %v", err)
			}
		})
	}
}
