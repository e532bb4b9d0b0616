package ledger

import (
	"bytes"
	"compress/flate"
	"runtime"
	"strings"
	"testing"
)

// FuzzRecordBody: whatever (flow, body, rz) recordBody accepts, packing
// the rest it decoded and decoding that again gives the same result, so a
// record rewritten by RecoverOrphans or the snapshot reads back as it was
// read; a new-layout result always starts with its flow number. What it
// refuses it refuses with an error naming the record, never a panic, and
// never past maxResultBytes (a zip bomb costs at most that).
func FuzzRecordBody(f *testing.F) {
	p := newResultPacker()
	big := strings.Repeat(`{"barcode":"4006381333931","qty":1,"price_cents":199},`, 40)
	f.Add("1000000000000042", "", p.pack(`"store_id":"S1","kind":"sale","lines":[]}`))
	f.Add("1000000000000042", "", p.pack(`"store_id":"S1","lines":[`+big+`{}]}`))
	f.Add("1000000000000042", `{"flow_no":"1000000000000042","old":1}`, "")
	f.Add("1", "", "0")
	f.Add("1", "", "z")
	f.Add("1", "", "?x")
	f.Fuzz(func(t *testing.T, flow, body, rz string) {
		got, err := recordBody(flow, body, rz)
		if err != nil {
			if !strings.Contains(err.Error(), "record "+flow) {
				t.Fatalf("error %q does not name record %s", err, flow)
			}
			return
		}
		if body != "" || rz == "" {
			// The old layout is honoured as it is stored.
			if string(got) != body {
				t.Fatalf("old layout read as %q, stored %q", got, body)
			}
			return
		}
		prefix := `{"flow_no":"` + flow + `",`
		rest, ok := strings.CutPrefix(string(got), prefix)
		if !ok {
			t.Fatalf("result %.80q does not start with its flow number %s", got, flow)
		}
		if len(rest) > maxResultBytes {
			t.Fatalf("inflated %d bytes, past the %d bound", len(rest), maxResultBytes)
		}
		again, err := recordBody(flow, "", p.pack(rest))
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("re-packed result reads %.80q, %v; first read %.80q", again, err, got)
		}
	})
}

// deflated is s compressed the way pack does, without pack's size rule.
func deflated(t testing.TB, s string) string {
	var buf bytes.Buffer
	w, _ := flate.NewWriter(&buf, flate.BestSpeed)
	_, _ = w.Write([]byte(s))
	_ = w.Close()
	return buf.String()
}

// TestRecordBodyRefusesDamage: hostile and damaged records are an error
// naming the record, and a zip bomb allocates about maxResultBytes, not
// what it would inflate to.
func TestRecordBodyRefusesDamage(t *testing.T) {
	rest := strings.Repeat(`{"barcode":"4006381333931","qty":1,"price_cents":199},`, 100) + `{}]}`
	good := deflated(t, rest)
	bomb := deflated(t, strings.Repeat("\x00", 32<<20)) // ~32 KB inflating to 32 MiB
	for _, tc := range []struct {
		name, rz, want string
	}{
		{"truncated", "z" + good[:len(good)/2], "unexpected EOF"},
		{"cut before the last byte", "z" + good[:len(good)-1], "unexpected EOF"},
		{"zip bomb", "z" + bomb, "more than"},
		// A stored block (BFINAL 1, BTYPE 00) whose LEN does not match ^NLEN.
		{"stored block, wrong length", "z\x01\x05\x00\x00\x00hello", "corrupt input"},
		// A stored block whose LEN and NLEN agree on 9 bytes but 5 follow.
		{"stored block, length past the data", "z\x01\x09\x00\xf6\xffhello", "unexpected EOF"},
		{"bytes after the final block", "z" + good + "tail", "after the compressed result"},
		{"unknown form", "?x", "unknown form"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			got, err := recordBody("1000000000000042", "", tc.rz)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatalf("accepted: %d bytes", len(got))
			}
			if !strings.Contains(err.Error(), "record 1000000000000042") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q: want one naming the record and %q", err, tc.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*maxResultBytes {
				t.Fatalf("allocated %d bytes to refuse it (bound %d)", alloc, 8*maxResultBytes)
			}
		})
	}
	if got, err := recordBody("1000000000000042", "", "z"+good); err != nil || string(got) != `{"flow_no":"1000000000000042",`+rest {
		t.Fatalf("the undamaged record reads %.80q, %v", got, err)
	}
}
