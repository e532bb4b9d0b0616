package main

import (
	"testing"

	"github.com/posedge/posedge/edge/config"
	"github.com/posedge/posedge/edge/ledger"
	"github.com/posedge/posedge/sync/replay"
	"github.com/posedge/posedge/sync/wire"
)

// Each default posedge.yaml spells that another package also owns must
// be that package's (issue 25 step 6): main links both, so the check
// lives here and a default changed on one side only fails it.
func TestConfigDefaultsAreTheOwners(t *testing.T) {
	c := config.Defaults()
	tests := []struct {
		key       string
		got, want any
	}{
		{"hq.subject_prefix", c.HQ.SubjectPrefix, wire.DefaultSubjectPrefix},
		{"hq.batch_size", c.HQ.BatchSize, replay.DefaultBatchSize},
		{"hq.batch_bytes", c.HQ.BatchBytes, replay.DefaultBatchBytes},
		{"hq.ack_timeout", c.HQ.AckTimeout.D(), replay.DefaultAckTimeout},
		{"hq.confirm_after", c.HQ.ConfirmAfter.D(), replay.DefaultConfirmAfter},
		{"hq.catalog_bucket", c.HQ.CatalogBucket, wire.DefaultCatalogBucket},
		{"redis.wait_timeout", c.Redis.WaitTimeout.D(), ledger.DefaultWaitTimeout},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("config default of %s is %v, its owner's is %v", tc.key, tc.got, tc.want)
		}
	}
}
