package hq_test

import (
	"testing"
	"time"

	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/wire"
)

// BenchmarkDecodeMsg is one sale's decoding as the fetch goroutine does
// it: DecodeMsg (strict check, parse, subject and ID checks) and
// CheckMsgID.
//
//	go test -run '^$' -bench DecodeMsg -benchmem ./sync/hq/
func BenchmarkDecodeMsg(b *testing.B) {
	s := sale{store: "S001", flow: "123456", cents: 199, terminal: "T07", created: t0}
	body, subject, id := s.body(), wire.TxnSubject(wire.DefaultSubjectPrefix, "S001"), wire.MsgID("S001", "123456")
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		m, err := hq.DecodeMsg(wire.DefaultSubjectPrefix, subject, wire.SchemaV1, body, now)
		if err == nil {
			err = hq.CheckMsgID(m, id)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
