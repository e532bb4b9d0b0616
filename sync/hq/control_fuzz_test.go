package hq_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/posedge/posedge/internal/businessday"
	"github.com/posedge/posedge/sync/hq"
	"github.com/posedge/posedge/sync/hqdb"
	"github.com/posedge/posedge/sync/wire"
)

// FuzzDecodeManifestAndHeartbeat: of any body on a store's manifest or
// heartbeat subject, HQ keeps only one of that store, with figures it
// can use (a real business date, no negative count, a journal retention
// within bounds), and what it keeps is what a plain JSON reader finds in
// the body: a store cannot make completeness or the fleet view read
// other figures than a reporting tool reading the stored body.
func FuzzDecodeManifestAndHeartbeat(f *testing.F) {
	f.Add(false, []byte(`{"store_id":"S001","terminal_id":"T01","date":"20260520","sales":2,"sales_cents":1000,"refunds":1,"refund_cents":300,"first_flow_no":"1","last_flow_no":"3","sent_at":"2026-05-21T00:05:00Z"}`))
	f.Add(false, []byte(`{"store_id":"S001","terminal_id":"T01","date":"20260231","sales":-1}`))
	f.Add(true, []byte(`{"store_id":"S001","sent_at":"2026-05-21T00:05:00Z","backlog":3,"version":"1.0","heartbeat_format":2,"unconfirmed":2,"journal_retention_days":30}`))
	f.Add(true, []byte(`{"store_id":"S001","sent_at":"2026-05-21T00:05:00Z","backlog":0,"version":"1.0","journal_retention_days":-5}`))
	f.Add(true, []byte(`{"store_id":"S002","sent_at":"2026-05-21T00:05:00Z","backlog":0,"version":"1.0"}`))
	f.Fuzz(func(t *testing.T, heartbeat bool, body []byte) {
		subject, kind := wire.ManifestSubject(wire.DefaultSubjectPrefix, "S001"), hqdb.KindManifest
		if heartbeat {
			subject, kind = wire.HeartbeatSubject(wire.DefaultSubjectPrefix, "S001"), hqdb.KindHeartbeat
		}
		m, err := hq.DecodeMsg(wire.DefaultSubjectPrefix, subject, wire.SchemaV1, body, time.Unix(0, 0))
		if err != nil {
			return
		}
		if m.Kind != kind || m.StoreID != "S001" {
			t.Fatalf("a body on %s decoded as kind %v of store %q", subject, m.Kind, m.StoreID)
		}
		if heartbeat {
			hb := m.Heartbeat
			if hb.StoreID != "S001" || hb.JournalRetentionDays < 0 || hb.JournalRetentionDays > wire.MaxJournalRetentionDays {
				t.Fatalf("accepted an unusable heartbeat %+v from %q", hb, body)
			}
			var plain wire.Heartbeat
			if err := json.Unmarshal(body, &plain); err != nil || !reflect.DeepEqual(plain, hb) {
				t.Fatalf("HQ reads %+v, a plain reader %+v (%v), from %q", hb, plain, err, body)
			}
			return
		}
		mf := m.Manifest
		if mf.StoreID != "S001" || !businessday.Valid(mf.Date) || mf.TerminalID == "" ||
			mf.Sales < 0 || mf.SalesCents < 0 || mf.Refunds < 0 || mf.RefundCents < 0 {
			t.Fatalf("accepted an unusable manifest %+v from %q", mf, body)
		}
		var plain wire.Manifest
		if err := json.Unmarshal(body, &plain); err != nil || !reflect.DeepEqual(plain, mf) {
			t.Fatalf("HQ reads %+v, a plain reader %+v (%v), from %q", mf, plain, err, body)
		}
	})
}
