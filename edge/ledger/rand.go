package ledger

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
)

func randRead(b []byte) (int, error) { return rand.Read(b) }

func hexStr(b []byte) string { return hex.EncodeToString(b) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
