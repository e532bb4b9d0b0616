package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/posedge/posedge/internal/cents"
)

// FuzzDecodeEntry: a catalog value from HQ is accepted only when every
// reader sees the same item in it — exactly the keys name, price_cents
// and active, once each and in that case, nothing after the object —
// and what is accepted is a usable item that survives a round trip.
func FuzzDecodeEntry(f *testing.F) {
	f.Add([]byte(`{"name":"Milk","price_cents":350,"active":true}`))
	f.Add([]byte(`{"name":"Milk","price_cents":350,"active":false,"price_cents":1}`))
	f.Add([]byte(`{"name":"Milk","Price_Cents":350,"active":true}`))
	f.Add([]byte(`{"name":"Milk","price_cents":350,"active":true} {}`))
	f.Add([]byte(`{"name":"Milk","price_cents":3.5e2,"active":true}`))
	f.Add([]byte(`{"name":"","price_cents":-1}`))
	f.Fuzz(func(t *testing.T, value []byte) {
		v, err := decodeEntry(value)
		if err != nil {
			return
		}
		keys := topLevelKeys(t, value)
		if len(keys) != 3 || keys["name"] != 1 || keys["price_cents"] != 1 || keys["active"] != 1 {
			t.Fatalf("accepted %q with keys %v", value, keys)
		}
		var plain struct {
			Name       string `json:"name"`
			PriceCents int64  `json:"price_cents"`
			Active     bool   `json:"active"`
		}
		if err := json.Unmarshal(value, &plain); err != nil {
			t.Fatalf("accepted %q, which a plain reader refuses: %v", value, err)
		}
		if plain.Name != *v.Name || plain.PriceCents != *v.PriceCents || plain.Active != *v.Active {
			t.Fatalf("accepted %q as %q/%d/%v, a plain reader reads %+v", value, *v.Name, *v.PriceCents, *v.Active, plain)
		}
		if *v.Name == "" || len(*v.Name) > MaxName || *v.PriceCents < 0 || *v.PriceCents > cents.MaxItemPrice {
			t.Fatalf("accepted an unusable item %q", value)
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		w, err := decodeEntry(again)
		if err != nil || *w.Name != *v.Name || *w.PriceCents != *v.PriceCents || *w.Active != *v.Active {
			t.Fatalf("the accepted item %s does not read back: %v", again, err)
		}
	})
}

// topLevelKeys counts the keys of the JSON object in b as written.
func topLevelKeys(t *testing.T, b []byte) map[string]int {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("accepted %q, which is not an object", b)
	}
	keys := map[string]int{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys[tok.(string)]++
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Token(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		t.Fatalf("accepted %q with data after the object", b)
	}
	return keys
}
