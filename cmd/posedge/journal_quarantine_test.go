package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/posedge/posedge/internal/testenv"
)

// `posedge journal quarantine list|retry` reach the running daemon's
// admin API (routes wired by the daemon, admin token from the config) and
// print its answers; a malformed command line is exit code 2.
func TestJournalQuarantineCommands(t *testing.T) {
	s := testenv.StartStore(t, testenv.StoreOptions{Bin: storeBinaries(t), Terminals: 1, NoHQ: true})
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"journal", "quarantine", "list", "--config", s.Config}, &out, &out); err != nil {
		t.Fatalf("list: %v\n%s", err, out.String())
	}
	var list struct {
		Transactions []struct {
			FlowNo string `json:"flow_no"`
		} `json:"transactions"`
	}
	if err := json.Unmarshal(out.Bytes(), &list); err != nil || list.Transactions == nil || len(list.Transactions) != 0 {
		t.Fatalf("list of a healthy store: %v %q", err, out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"journal", "quarantine", "retry", "--config", s.Config, "2000000000000001"}, &out, &out); err != nil {
		t.Fatalf("retry: %v\n%s", err, out.String())
	}
	var retried struct {
		Retried *int `json:"retried"`
	}
	if err := json.Unmarshal(out.Bytes(), &retried); err != nil || retried.Retried == nil || *retried.Retried != 0 {
		t.Fatalf("retry of a flow number not set aside: %v %q", err, out.String())
	}
	out.Reset()
	err := run(ctx, []string{"journal", "quarantine", "retry", "--config", s.Config, "not-a-flow"}, &out, &out)
	if err == nil {
		t.Fatalf("retry of a malformed flow number succeeded: %q", out.String())
	}
	for _, args := range [][]string{{"journal", "quarantine"}, {"journal", "quarantine", "drop"}, {"journal", "quarantine", "list", "extra", "--config", s.Config}} {
		var ee *exitError
		if err := run(ctx, args, &out, &out); !errors.As(err, &ee) || ee.code != 2 {
			t.Errorf("%v: %v, want exit code 2", args, err)
		}
	}
}
