package apispec

import (
	"testing"
)

// Both descriptions load, are valid OpenAPI 3.1 and every example in
// them is valid against its schema. (edge/api's tests hold File to the
// handlers; posedge-hq's description is held to its routes here.)
func TestDescriptionsAndExamples(t *testing.T) {
	for _, file := range []string{File, HQFile} {
		t.Run(file, func(t *testing.T) {
			s, err := LoadFromModule(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range s.ValidateDocument() {
				t.Errorf("document: %s", p)
			}
			n, problems := s.CheckExamples()
			for _, p := range problems {
				t.Error(p)
			}
			if n == 0 {
				t.Error("no example checked")
			}
		})
	}
}

// Every route posedge-hq registers is described in HQFile under the hq
// tag, and every operation described there is registered.
func TestHQDescriptionMatchesItsRoutes(t *testing.T) {
	s, err := LoadFromModule(HQFile)
	if err != nil {
		t.Fatal(err)
	}
	routes, err := RegisteredRoutes("../../sync/hq")
	if err != nil {
		t.Fatal(err)
	}
	if len(routes) < 5 {
		t.Fatalf("found only %d routes in sync/hq: the route scan is broken", len(routes))
	}
	for r := range routes {
		if _, ok := s.Ops[r]; !ok {
			t.Errorf("%s (registered in sync/hq) is not in %s", r, HQFile)
		}
	}
	for key, op := range s.Ops {
		if !routes[key] {
			t.Errorf("%s is described in %s but sync/hq does not register it", key, HQFile)
		}
		if len(op.Tags) != 1 || op.Tags[0] != HQ {
			t.Errorf("%s: tags %v, want [%s]", key, op.Tags, HQ)
		}
	}
}

func TestTemplateMatchesOnlyItsListener(t *testing.T) {
	s, err := LoadFromModule(File)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ listener, method, path, want string }{
		{Terminal, "GET", "/v1/items/A1", "/v1/items/{barcode}"},
		{Admin, "GET", "/v1/items/A1", ""},
		{Terminal, "GET", "/v1/items/", ""},
		{Admin, "POST", "/admin/v1/items/A1/stock-adjustments", "/admin/v1/items/{barcode}/stock-adjustments"},
		{Terminal, "DELETE", "/v1/sales/1", ""},
	} {
		if got := s.Template(c.listener, c.method, c.path); got != c.want {
			t.Errorf("%s %s on %s: %q, want %q", c.method, c.path, c.listener, got, c.want)
		}
	}
}
