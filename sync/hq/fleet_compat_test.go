package hq

import (
	"testing"
	"time"

	"github.com/posedge/posedge/sync/hqdb"
)

// TestHeartbeatFormat2AcceptedByV1Rules: a format-2 heartbeat, with the
// header an old posedge-hq checks, decodes under the v1 rules.
func TestHeartbeatFormat2AcceptedByV1Rules(t *testing.T) {
	body := []byte(`{"store_id":"s1","sent_at":"2026-12-01T12:00:00Z","backlog":3,"version":"1.2.0",` +
		`"heartbeat_format":2,"unconfirmed":0,"mode":"normal","status_level":"ok","store_clock":"2026-12-01T12:00:00Z","future_field":1}`)
	m, err := DecodeMsg("posedge", "posedge.s1.heartbeat", "1", body, time.Now())
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if m.Kind != hqdb.KindHeartbeat || m.Heartbeat.Backlog != 3 || m.Heartbeat.Version != "1.2.0" {
		t.Fatalf("decoded %+v", m.Heartbeat)
	}
}
