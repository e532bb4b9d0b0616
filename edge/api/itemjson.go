package api

import (
	"encoding/json"
	"strconv"

	"github.com/posedge/posedge/edge/ledger"
)

// appendItemJSON appends it as json.Marshal encodes it, byte for byte,
// without reflection (issue 26: the lookup's CPU). Strings that need no
// escaping (a barcode always, a name mostly) are copied as they are;
// any other string is left to encoding/json, so escaping stays its
// (HTML-safe, invalid UTF-8 as U+FFFD). FuzzItemJSONAgreesWithMarshal
// holds the two together.
func appendItemJSON(b []byte, it *ledger.Item) []byte {
	b = append(b, `{"barcode":`...)
	b = appendJSONString(b, it.Barcode)
	b = append(b, `,"name":`...)
	b = appendJSONString(b, it.Name)
	b = append(b, `,"price_cents":`...)
	b = strconv.AppendInt(b, it.PriceCents, 10)
	b = append(b, `,"stock":`...)
	b = strconv.AppendInt(b, it.Stock, 10)
	b = append(b, `,"stale":`...)
	b = strconv.AppendBool(b, it.Stale)
	return append(b, '}')
}

// appendJSONString appends s as a JSON string the way encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			if err != nil { // a string always encodes; kept for the type's sake
				panic(err)
			}
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
