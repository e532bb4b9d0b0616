package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"

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

// FuzzLiveEntry: a republished change is taken only with a non-empty key
// under the bucket's prefix and a revision above 0, both read back exactly
// from what came (subject and headers); its value is passed on
// untouched (decodeEntry judges it), and nothing panics.
func FuzzLiveEntry(f *testing.F) {
	const prefix = "posedge.catalog.POS_CATALOG."
	f.Add(prefix+"_all.A", "7", "6", "", []byte(`{"name":"A","price_cents":1,"active":true}`))
	f.Add(prefix+"S1.A", "0", "0", "DEL", []byte(nil))
	f.Add("posedge.catalog.OTHER._all.A", "7", "x", "PURGE", []byte(`{}`))
	f.Add(prefix+"S1.A", "18446744073709551616", "-1", "PUT", []byte(`{}`))
	f.Fuzz(func(t *testing.T, subject, seq, last, op string, value []byte) {
		m := nats.NewMsg(subject)
		m.Header.Set("Nats-Sequence", seq)
		m.Header.Set("Nats-Last-Sequence", last)
		if op != "" {
			m.Header.Set("KV-Operation", op)
		}
		m.Data = value
		e, l, err := liveEntry(m, prefix)
		if err != nil {
			return
		}
		wantRev, err1 := strconv.ParseUint(seq, 10, 64)
		wantLast, err2 := strconv.ParseUint(last, 10, 64)
		if e.rev == 0 || e.key == "" || prefix+e.key != subject || err1 != nil || err2 != nil || e.rev != wantRev || l != wantLast ||
			!bytes.Equal(e.value, value) {
			t.Fatalf("liveEntry(%q, %q, %q) = %+v, %d", subject, seq, last, e, l)
		}
		if e.put != (op == "" || op == "PUT") {
			t.Fatalf("operation %q read as put=%v", op, e.put)
		}
	})
}
