package apispec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	valerrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// The descriptions' paths from the module root: File for the store's
// daemon (posedge), HQFile for posedge-hq.
const (
	File   = "docs/openapi.yaml"
	HQFile = "docs/openapi-hq.yaml"
)

// Listener names, the tags of the descriptions' operations: Terminal and
// Admin are in File, HQ in HQFile.
const (
	Terminal = "terminal"
	Admin    = "admin"
	HQ       = "hq"
)

// Spec is a loaded description. Its checks are safe for concurrent use.
type Spec struct {
	Path  string // the file read
	Name  string // the file as messages name it (File, HQFile)
	Model *v3.Document
	// Ops maps "METHOD /template" to its operation.
	Ops map[string]*v3.Operation

	mu sync.Mutex // the validator's caches are not documented as safe for concurrent use
	v  validator.Validator
}

// Load reads and compiles the description at path.
func Load(path string) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read API description: %w", err)
	}
	doc, err := libopenapi.NewDocument(b)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("build model of %s: %w", path, err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("validator of %s: %w", path, errors.Join(errs...))
	}
	s := &Spec{Path: path, Name: path, Model: &m.Model, Ops: map[string]*v3.Operation{}, v: v}
	for p, item := range m.Model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			s.Ops[strings.ToUpper(method)+" "+p] = op
		}
	}
	return s, nil
}

// LoadFromModule loads file (File or HQFile) from the root of the module
// the working directory is in (a test runs in its package's directory).
func LoadFromModule(file string) (*Spec, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, fmt.Errorf("find module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			s, err := Load(filepath.Join(dir, file))
			if err == nil {
				s.Name = file
			}
			return s, err
		}
		up := filepath.Dir(dir)
		if up == dir {
			return nil, fmt.Errorf("find module root: no go.mod above the working directory")
		}
		dir = up
	}
}

// ValidateDocument checks the description itself against OpenAPI 3.1.
func (s *Spec) ValidateDocument() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if ok, errs := s.v.ValidateDocument(); !ok {
		for _, e := range errs {
			out = append(out, describe(e))
		}
	}
	return out
}

// Template is the described path a request path matches on a listener,
// or "" when the listener has no such operation.
func (s *Spec) Template(listener, method, path string) string {
	segs := strings.Split(path, "/")
	for key, op := range s.Ops {
		m, tpl, _ := strings.Cut(key, " ")
		if m != method || !slices.Contains(op.Tags, listener) {
			continue
		}
		ts := strings.Split(tpl, "/")
		if len(ts) != len(segs) {
			continue
		}
		ok := true
		for i := range ts {
			if !(strings.HasPrefix(ts[i], "{") && segs[i] != "") && ts[i] != segs[i] {
				ok = false
				break
			}
		}
		if ok {
			return tpl
		}
	}
	return ""
}

// CheckRequest lists how a request to a listener breaks the description
// (none: it is a request the description accepts). body is its body; the
// request's own Body is not read.
func (s *Spec) CheckRequest(listener string, req *http.Request, body []byte) []string {
	if s.Template(listener, req.Method, req.URL.Path) == "" {
		return []string{fmt.Sprintf("the %s API describes no %s %s", listener, req.Method, req.URL.Path)}
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	if ok, errs := s.v.ValidateHttpRequestSync(r); !ok {
		for _, e := range errs {
			out = append(out, describe(e))
		}
	}
	return out
}

// CheckResponse lists how an answer breaks the description: for a
// described operation its status, headers and body; for any other path
// it must be a 404 not_found ErrorBody (never a redirect). op is the
// answered operation ("METHOD /template"), "" for an undescribed path.
func (s *Spec) CheckResponse(listener string, req *http.Request, res *http.Response, body []byte) (op string, problems []string) {
	tpl := s.Template(listener, req.Method, req.URL.Path)
	if tpl == "" {
		sch, ok := s.Model.Components.Schemas.Get("ErrorBody")
		if !ok {
			return "", []string{"the description has no components.schemas.ErrorBody"}
		}
		if ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaBytes(sch.Schema(), body); !ok || res.StatusCode != http.StatusNotFound {
			return "", []string{fmt.Sprintf("no such %s path: got %d %s, want 404 not_found %v", listener, res.StatusCode, body, errs)}
		}
		return "", nil
	}
	r := *res
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	ok, errs := s.v.ValidateHttpResponse(req, &r)
	s.mu.Unlock()
	if !ok {
		for _, e := range errs {
			problems = append(problems, describe(e))
		}
	}
	op = req.Method + " " + tpl
	// Every header of the answer is one HTTP itself sets or one the
	// description names for that status.
	if dr, ok := s.Ops[op].Responses.Codes.Get(strconv.Itoa(res.StatusCode)); ok {
		for h := range res.Header {
			switch h {
			case "Content-Type", "Content-Length", "Date":
				continue
			}
			found := false
			if dr.Headers != nil {
				for dh := range dr.Headers.KeysFromOldest() {
					found = found || strings.EqualFold(dh, h)
				}
			}
			if !found {
				problems = append(problems, fmt.Sprintf("header %s is not named in the description of %d", h, res.StatusCode))
			}
		}
	}
	return op, problems
}

func describe(e *valerrors.ValidationError) string {
	s := e.Message
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	for _, f := range e.SchemaValidationErrors {
		s += fmt.Sprintf(" [%s: %s]", f.FieldPath, f.Reason)
	}
	return s
}
