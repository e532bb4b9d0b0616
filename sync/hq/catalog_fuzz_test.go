package hq

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/posedge/posedge/sync/wire"
)

// FuzzParseCatalogCSV: of any price list, an accepted one holds only
// valid entries, each key once, one row per record at most, and written
// back as CSV it reads as the same rows — what is imported is what the
// file says, however it was quoted.
func FuzzParseCatalogCSV(f *testing.F) {
	f.Add([]byte("barcode,name,price_cents,active,store_id\nA1,Milk,350,true,\nA1,Milk,360,1,S1\n"))
	f.Add([]byte("A1,Milk,350,false\n"))
	f.Add([]byte("A1,\"Milk, 1 l\",350,true\nA2,Bread,3.5,true\n"))
	f.Add([]byte("A1,Milk,350,true\nA1,Milk,351,true\n"))
	f.Add([]byte("A1,Milk,100000000001,true\n"))
	f.Fuzz(func(t *testing.T, file []byte) {
		rows, err := ParseCatalogCSV(bytes.NewReader(file), wire.DefaultMaxSaleCents)
		if err != nil {
			return
		}
		if len(rows) > bytes.Count(file, []byte("\n"))+1 {
			t.Fatalf("%d rows from %d lines", len(rows), bytes.Count(file, []byte("\n"))+1)
		}
		seen := map[string]bool{}
		var out bytes.Buffer
		w := csv.NewWriter(&out)
		for _, r := range rows {
			if fe := ValidateCatalogEntry(r.StoreID, r.Barcode, r.Item, wire.DefaultMaxSaleCents); fe != nil {
				t.Fatalf("accepted line %d, which is invalid: %v", r.Line, fe)
			}
			k := CatalogKey(r.StoreID, r.Barcode)
			if seen[k] {
				t.Fatalf("accepted key %s twice", k)
			}
			seen[k] = true
			if err := w.Write([]string{r.Barcode, r.Item.Name, strconv.FormatInt(r.Item.PriceCents, 10), strconv.FormatBool(r.Item.Active), r.StoreID}); err != nil {
				t.Fatal(err)
			}
		}
		w.Flush()
		again, err := ParseCatalogCSV(&out, wire.DefaultMaxSaleCents)
		if err != nil {
			t.Fatalf("the accepted rows written back are refused: %v\n%s", err, out.Bytes())
		}
		if len(again) != len(rows) {
			t.Fatalf("%d rows read back, %d accepted", len(again), len(rows))
		}
		for i := range rows {
			a, b := rows[i], again[i]
			if a.StoreID != b.StoreID || a.Barcode != b.Barcode || a.Item != b.Item {
				t.Fatalf("row %d reads back as %+v, was %+v", i, b, a)
			}
		}
	})
}

// FuzzDecodeCatalogPut: a PUT body is accepted only when a plain JSON
// reader sees the same entry in it (no duplicate key, no key in another
// case, no trailing data), with the default active flag true.
func FuzzDecodeCatalogPut(f *testing.F) {
	f.Add([]byte(`{"name":"Milk","price_cents":350}`))
	f.Add([]byte(`{"name":"Milk","price_cents":350,"active":false,"store_id":"S1"}`))
	f.Add([]byte(`{"name":"Milk","price_cents":350,"price_cents":1}`))
	f.Add([]byte(`{"Name":"Milk","price_cents":350}`))
	f.Add([]byte(`{"name":"Milk","price_cents":3.5}`))
	f.Add([]byte(`{"name":"Milk","price_cents":350} []`))
	f.Fuzz(func(t *testing.T, body []byte) {
		storeID, it, fe := decodeCatalogPut(body)
		if fe != nil {
			return
		}
		var plain struct {
			Name       string `json:"name"`
			PriceCents int64  `json:"price_cents"`
			Active     *bool  `json:"active"`
			StoreID    string `json:"store_id"`
		}
		if err := json.Unmarshal(body, &plain); err != nil {
			t.Fatalf("accepted %q, which a plain reader refuses: %v", body, err)
		}
		active := plain.Active == nil || *plain.Active
		if plain.Name != it.Name || plain.PriceCents != it.PriceCents || active != it.Active || plain.StoreID != storeID {
			t.Fatalf("accepted %q as %+v (store %q); a plain reader reads %+v", body, it, storeID, plain)
		}
		// Keys as a JSON reader decodes them ("\u0070rice_cents" is
		// price_cents), not as bytes: exactly one may be price_cents in
		// any case, or two readers could see two prices.
		if n := keysFolding(t, body, "price_cents"); n != 1 {
			t.Fatalf("accepted %q with price_cents written %d times", body, n)
		}
	})
}

// keysFolding counts the top-level keys of the JSON object b that equal
// name under Unicode case folding, as encoding/json matches fields.
func keysFolding(t *testing.T, b []byte, name string) int {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("accepted %q, which is not an object", b)
	}
	n := 0
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			t.Fatalf("accepted %q, which a token reader refuses: %v", b, err)
		}
		if strings.EqualFold(tok.(string), name) {
			n++
		}
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			t.Fatalf("accepted %q, which a token reader refuses: %v", b, err)
		}
	}
	return n
}
