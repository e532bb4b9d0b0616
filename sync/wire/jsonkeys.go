package wire

import "github.com/posedge/posedge/internal/strictjson"

// This file is about the JSON keys of a message body (not Redis or
// idempotency keys): which names an object may hold, in which case.

// fields are the keys of one JSON object that a decoder maps to struct
// fields, and the fields of the objects below some of them.
type fields = strictjson.Fields

var (
	lineFields = &fields{Names: []string{"barcode", "qty", "price_cents"}, Numbers: []string{"qty", "price_cents"}}
	txnFields  = &fields{
		Names: []string{"flow_no", "store_id", "terminal_id", "kind", "total_cents", "tender",
			"created_at", "occurred_at", "original_flow_no", "lines"},
		Numbers: []string{"total_cents"},
		Below:   map[string]*fields{"lines": lineFields},
	}
)

// checkJSONKeys refuses a JSON text with two keys of one object equal but
// for case (or equal), a key that is one of the decoded field names but
// for case, and money or a quantity that is not a JSON number:
// encoding/json matches keys without regard to case and keeps the last
// duplicate, so such a body means different things to different readers.
func checkJSONKeys(body []byte, f *fields) error { return strictjson.Check(body, f) }
