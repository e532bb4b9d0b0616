package conventions

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The store's Redis has one owner, edge/redisdb: the key layout (every key
// starts with the prefix "pe:{<store>}:"), the script calls and the
// error classification. The rules below keep it so.

// redisOwner is the package allowed to spell the key prefix.
const redisOwner = "edge/redisdb"

// goRedis is the Redis client module; edge/api must not import it, so
// go-redis types never reach the HTTP layer.
const goRedis = "github.com/redis/go-redis"

// keyPrefixLiterals are the positions of string literals in f that spell
// the store's key prefix: one starting "pe:" or holding "pe:{".
func keyPrefixLiterals(fset *token.FileSet, f *ast.File) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err == nil && (strings.HasPrefix(s, "pe:") || strings.Contains(s, "pe:{")) {
			out = append(out, fset.Position(lit.Pos()).String()+" "+lit.Value)
		}
		return true
	})
	return out
}

// luaPkg is the package of the scripts; only edge/redisdb loads them, so
// each script's KEYS and ARGV are built in one place.
const luaPkg = "github.com/posedge/posedge/lua"

// imports reports whether f imports path or a package below it (for
// go-redis: any major version).
func imports(f *ast.File, path string) bool {
	for _, im := range f.Imports {
		if p, err := strconv.Unquote(im.Path.Value); err == nil && (p == path || strings.HasPrefix(p, path+"/")) {
			return true
		}
	}
	return false
}

func importsGoRedis(f *ast.File) bool { return imports(f, goRedis) }

// shippedGoFiles calls fn for every non-test Go file of the module, with
// its module-relative directory.
func shippedGoFiles(t *testing.T, fn func(fset *token.FileSet, dir string, f *ast.File)) int {
	t.Helper()
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "vendor" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		files++
		fn(fset, filepath.ToSlash(rel), f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("only %d Go files found under %s", files, root)
	}
	return files
}

// The key prefix is spelt in edge/redisdb only (tests may spell keys to
// check what the code wrote): a second spelling is a second owner of the
// layout, which can drift from the first.
func TestKeyPrefixOnlyInRedisDB(t *testing.T) {
	owner := 0
	shippedGoFiles(t, func(fset *token.FileSet, dir string, f *ast.File) {
		lits := keyPrefixLiterals(fset, f)
		if dir == redisOwner {
			owner += len(lits)
			return
		}
		for _, l := range lits {
			t.Errorf("%s: the Redis key prefix spelt outside %s: build the key with redisdb.Keys", l, redisOwner)
		}
	})
	if owner == 0 {
		t.Fatalf("no key prefix literal found in %s: the check looks for the wrong spelling", redisOwner)
	}
}

// edge/api imports no go-redis: what it carries from Redis (the limiter's
// pipelined read) is an opaque redisdb value.
func TestAPIImportsNoGoRedis(t *testing.T) {
	api := 0
	shippedGoFiles(t, func(fset *token.FileSet, dir string, f *ast.File) {
		if dir != "edge/api" {
			return
		}
		api++
		if importsGoRedis(f) {
			t.Errorf("%s imports %s: keep Redis types in edge/redisdb and edge/ledger", fset.Position(f.Package), goRedis)
		}
	})
	if api == 0 {
		t.Fatal("no Go file found in edge/api")
	}
}

// Scripts are run through edge/redisdb's typed calls only: no other
// shipped package imports lua (tests may, to run a script on its own).
func TestOnlyRedisDBImportsLua(t *testing.T) {
	owner := false
	shippedGoFiles(t, func(fset *token.FileSet, dir string, f *ast.File) {
		if !imports(f, luaPkg) {
			return
		}
		if dir == redisOwner {
			owner = true
			return
		}
		t.Errorf("%s imports %s: call the script through edge/redisdb, where its KEYS and ARGV are built", fset.Position(f.Package), luaPkg)
	})
	if !owner {
		t.Fatalf("%s imports no %s: the check looks for the wrong path", redisOwner, luaPkg)
	}
}

// The checks catch a planted violation, and pass the same file without it.
func TestRedisOwnerChecksFailOnPlantedViolations(t *testing.T) {
	tests := []struct {
		name, src string
		prefix    int
		goRedis   bool
		lua       bool
	}{
		{"clean", "package p\nimport \"strings\"\nvar _ = strings.ToUpper(\"pipe:x\")\n", 0, false, false},
		{"prefix spelt", "package p\nfunc k(s string) string { return \"pe:{\" + s + \"}:seq\" }\n", 1, false, false},
		{"prefix in a raw string", "package p\nconst k = `pe:{S}:promo`\n", 1, false, false},
		{"go-redis imported", "package p\nimport \"github.com/redis/go-redis/v9\"\nvar _ redis.Cmder\n", 0, true, false},
		{"lua imported", "package p\nimport \"github.com/posedge/posedge/lua\"\nvar _ = lua.MustScript\n", 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "planted.go", tt.src, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := keyPrefixLiterals(fset, f); len(got) != tt.prefix {
				t.Errorf("prefix literals %q, want %d", got, tt.prefix)
			}
			if got := importsGoRedis(f); got != tt.goRedis {
				t.Errorf("importsGoRedis = %v, want %v", got, tt.goRedis)
			}
			if got := imports(f, luaPkg); got != tt.lua {
				t.Errorf("imports lua = %v, want %v", got, tt.lua)
			}
		})
	}
}
