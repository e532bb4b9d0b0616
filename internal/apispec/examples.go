package apispec

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
)

// CheckExamples checks that every operation has an example for each
// described answer and that every example (request and answer) is valid
// against the schema it illustrates. checked counts the examples.
func (s *Spec) CheckExamples() (checked int, problems []string) {
	sv := schema_validation.NewSchemaValidator()
	check := func(where string, sch *base.SchemaProxy, ex any) {
		if sch == nil || ex == nil {
			return
		}
		n, ok := ex.(interface{ Decode(any) error })
		if !ok {
			problems = append(problems, fmt.Sprintf("example %s: a %T", where, ex))
			return
		}
		var v any
		if err := n.Decode(&v); err != nil {
			problems = append(problems, fmt.Sprintf("example %s: %v", where, err))
			return
		}
		b, err := json.Marshal(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("example %s: %v", where, err))
			return
		}
		if ok, errs := sv.ValidateSchemaBytes(sch.Schema(), b); !ok {
			for _, e := range errs {
				problems = append(problems, fmt.Sprintf("example %s: %s", where, describe(e)))
			}
		}
		checked++
	}
	for key, op := range s.Ops {
		examples := 0
		if op.RequestBody != nil {
			for ct, mt := range op.RequestBody.Content.FromOldest() {
				if mt.Example != nil {
					check(key+" request "+ct, mt.Schema, mt.Example)
				}
				for name, ex := range mt.Examples.FromOldest() {
					check(key+" request "+ct+" "+name, mt.Schema, ex.Value)
				}
			}
		}
		for code, r := range op.Responses.Codes.FromOldest() {
			if r.Content == nil {
				problems = append(problems, fmt.Sprintf("%s %s: no content described", key, code))
				continue
			}
			for ct, mt := range r.Content.FromOldest() {
				n := 0
				if mt.Example != nil {
					check(key+" "+code+" "+ct, mt.Schema, mt.Example)
					n++
				}
				for name, ex := range mt.Examples.FromOldest() {
					check(key+" "+code+" "+ct+" "+name, mt.Schema, ex.Value)
					n++
				}
				if n == 0 {
					problems = append(problems, fmt.Sprintf("%s %s %s: no example", key, code, ct))
				}
				examples += n
			}
		}
		if examples == 0 {
			problems = append(problems, fmt.Sprintf("%s: no example", key))
		}
	}
	if checked < len(s.Ops) {
		problems = append(problems, fmt.Sprintf("only %d examples checked for %d operations", checked, len(s.Ops)))
	}
	return checked, problems
}

// RegisteredRoutes reads the mux patterns ("METHOD /path") a package
// registers: the string literals of its non-test files in dir that are
// patterns.
func RegisteredRoutes(dir string) (map[string]bool, error) {
	pat := regexp.MustCompile(`^(GET|POST|PUT|DELETE|PATCH|HEAD) /[^ ]*$`)
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	out := map[string]bool{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", file, err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && pat.MatchString(s) {
					out[s] = true
				}
			}
			return true
		})
	}
	return out, nil
}
