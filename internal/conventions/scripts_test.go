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

// Every Redis script is a reviewed, tested file in lua/: no other
// package builds a script from source or sends EVAL itself. Running one
// goes through edge/redisdb's typed calls (TestOnlyRedisDBImportsLua).
func TestRedisScriptsLiveInLua(t *testing.T) {
	root := filepath.Join("..", "..")
	banned := map[string]bool{"NewScript": true, "Eval": true, "EvalSha": true, "EvalRO": true, "EvalShaRO": true, "ScriptLoad": true}
	bannedCmd := map[string]bool{"eval": true, "evalsha": true, "eval_ro": true, "evalsha_ro": true, "script": true}
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (rel == "lua" || rel == "vendor" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && banned[sel.Sel.Name] {
				t.Errorf("%s: %s(…) outside lua/: put the script in lua/ and run it with Script.Run or lua.RunPipelined", fset.Position(call.Pos()), sel.Sel.Name)
			}
			for _, a := range call.Args {
				if lit, ok := a.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, err := strconv.Unquote(lit.Value); err == nil && bannedCmd[strings.ToLower(s)] {
						t.Errorf("%s: Redis command %q sent outside lua/", fset.Position(lit.Pos()), s)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("only %d Go files found under %s", files, root)
	}
}
