package lua

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Every embedded file compiles in Redis's Lua (SCRIPT LOAD), and has a
// test here naming it.
func TestEveryScriptLoads(t *testing.T) {
	rdb := startRedis(t)
	names, err := fs.Glob(files, "*.lua")
	if err != nil || len(names) == 0 {
		t.Fatalf("embedded scripts: %v %v", names, err)
	}
	for _, name := range names {
		src, err := Source(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.ScriptLoad(context.Background(), src).Err(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSnapshotScript(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	rdb.Set(ctx, "pe:{S}:seq", 42, 0)
	rdb.HSet(ctx, "pe:{S}:daily:20260101", "t:T01:sales", 3)
	rdb.HSet(ctx, "pe:{S}:hourly:20260102", "09:sales", 1)
	rdb.HSet(ctx, "pe:{S}:item:A", "name", "a", "stock", 7)
	keys := []string{"pe:{S}:seq", "pe:{S}:daily:20260101", "pe:{S}:daily:20260102",
		"pe:{S}:hourly:20260101", "pe:{S}:hourly:20260102", "pe:{S}:item:A", "pe:{S}:item:B"}
	res, err := MustScript("snapshot.lua").Run(ctx, rdb, keys, 2).Slice()
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(res)
	if want := "[42 [t:T01:sales 3] [] [] [09:sales 1] 7 <nil>]"; got != want {
		t.Fatalf("snapshot %s, want %s", got, want)
	}
	rdb.Del(ctx, "pe:{S}:seq")
	res, err = MustScript("snapshot.lua").Run(ctx, rdb, keys[:1], 0).Slice()
	if err != nil || fmt.Sprint(res) != "[0]" {
		t.Fatalf("snapshot of an unset sequence: %v %v, want [0]", res, err)
	}
}

// correct.lua checks the fence before any write: a stale fence writes
// nothing at all, a current one applies every operation.
func TestCorrectScript(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	const fence = "pe:{S}:lock:reconcile:fence"
	rdb.Set(ctx, fence, 5, 0)
	rdb.HSet(ctx, "pe:{S}:daily:20260101", "t:T01:sales", 3)
	rdb.HSet(ctx, "pe:{S}:item:A", "name", "a", "price_cents", "150", "stock", 10)
	rdb.HSet(ctx, "pe:{S}:item:C", "name", "c", "price_cents", "99", "stock", 1)
	keys := []string{fence, "pe:{S}:daily:20260101", "pe:{S}:item:A", "pe:{S}:item:B", "pe:{S}:item:C", "pe:{S}:item:D"}
	args := []any{"counter", "t:T01:sales", -2, "",
		"stock", "", 4, "",
		"stock", "", 4, "", // B is missing: left missing
		"item", "c2", "12345678901234567", 9, // C exists: left alone
		"item", "d", "12345678901234567", 9} // D is missing: restored
	state := func() string {
		return fmt.Sprint(rdb.HGetAll(ctx, keys[1]).Val(), rdb.HGetAll(ctx, keys[2]).Val(), rdb.Exists(ctx, keys[3]).Val(),
			rdb.HGetAll(ctx, keys[4]).Val(), rdb.HGetAll(ctx, keys[5]).Val())
	}
	before := state()

	tests := []struct {
		name, fence string
		fenced      bool
	}{
		{"older holder", "4", true},
		{"unset fence", "", true},
		{"current holder", "5", false},
	}
	for _, tt := range tests {
		if tt.name == "unset fence" {
			rdb.Del(ctx, fence)
		} else {
			rdb.Set(ctx, fence, 5, 0)
		}
		n, err := MustScript("correct.lua").Run(ctx, rdb, keys, append([]any{tt.fence}, args...)...).Int64()
		if tt.fenced {
			if err == nil || !strings.HasPrefix(err.Error(), "FENCED") {
				t.Fatalf("%s: %d %v, want a FENCED error", tt.name, n, err)
			}
			if got := state(); got != before {
				t.Fatalf("%s wrote: %s, was %s", tt.name, got, before)
			}
			continue
		}
		if err != nil || n != 5 {
			t.Fatalf("%s: %d %v, want 5 corrections", tt.name, n, err)
		}
	}
	want := "map[t:T01:sales:1] map[name:a price_cents:150 stock:14] 0 map[name:c price_cents:99 stock:1] map[name:d price_cents:12345678901234567 stock:9]"
	if got := state(); got != want {
		t.Fatalf("after correcting:\n%s\nwant\n%s", got, want)
	}
	if ttl := rdb.TTL(ctx, keys[1]).Val(); ttl <= 0 {
		t.Fatalf("corrected counter hash has no expiry (TTL %v)", ttl)
	}
	_, err := MustScript("correct.lua").Run(ctx, rdb, keys[:2], "5", "drop", "", "", "").Result()
	if err == nil {
		t.Fatal("an unknown op was accepted")
	}
}

func TestSeqRaiseScript(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	const seq = "pe:{S}:seq"
	tests := []struct {
		name       string
		set        int64 // 0: unset
		floor      int64
		want, have int64
	}{
		{"unset, raised", 0, 7, 7, 7},
		{"below, raised", 3, 999999999999999, 999999999999999, 999999999999999},
		{"above, kept", 12, 7, 12, 12},
		{"equal, kept", 7, 7, 7, 7},
	}
	for _, tt := range tests {
		rdb.Del(ctx, seq)
		if tt.set > 0 {
			rdb.Set(ctx, seq, tt.set, 0)
		}
		got, err := MustScript("seq_raise.lua").Run(ctx, rdb, []string{seq}, tt.floor).Int64()
		if err != nil || got != tt.want {
			t.Errorf("%s: %d %v, want %d", tt.name, got, err, tt.want)
		}
		if v, _ := rdb.Get(ctx, seq).Int64(); v != tt.have {
			t.Errorf("%s: sequence %d, want %d", tt.name, v, tt.have)
		}
	}
}

func TestTxnCompleteScript(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	idem, tok := "pe:{S}:idem:T01:k", "pe:{S}:token:k"
	tests := []struct {
		name      string
		tokenHeld bool
		keys      []string
		wantTok   string
	}{
		{"plain key", true, []string{idem}, "PENDING"},
		{"token form, token held", true, []string{idem, tok}, "COMPLETED"},
		{"token form, token expired", false, []string{idem, tok}, ""},
	}
	for _, tt := range tests {
		rdb.Del(ctx, idem, tok)
		rdb.HSet(ctx, idem, "state", "PROCESSING", "flow_no", "1")
		if tt.tokenHeld {
			rdb.HSet(ctx, tok, "terminal", "T01", "state", "PENDING")
		}
		if err := MustScript("txn_complete.lua").Run(ctx, rdb, tt.keys).Err(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if m := rdb.HGetAll(ctx, idem).Val(); m["state"] != "COMPLETED" || m["flow_no"] != "1" {
			t.Errorf("%s: record %v", tt.name, m)
		}
		if v := rdb.HGet(ctx, tok, "state").Val(); v != tt.wantTok {
			t.Errorf("%s: token state %q, want %q", tt.name, v, tt.wantTok)
		}
	}
}

// RunPipelined falls back to EVAL when the script cache is empty (a
// just-promoted replica), and the commands queued after the script run
// in the same attempt.
func TestRunPipelinedFallsBackToEval(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	s := MustScript("seq_raise.lua")
	for _, flush := range []bool{true, false} {
		if flush {
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		var get *redis.StringCmd
		calls := 0
		c := RunPipelined(ctx, rdb, s, []string{"pe:{S}:seq"}, []any{11}, func(p redis.Pipeliner) {
			calls++
			get = p.Get(ctx, "pe:{S}:seq")
		})
		if n, err := c.Int64(); err != nil || n != 11 {
			t.Fatalf("flushed cache %v: %d %v", flush, n, err)
		}
		if v, err := get.Result(); err != nil || v != "11" {
			t.Fatalf("flushed cache %v: queued command %q %v", flush, v, err)
		}
		if want := map[bool]int{true: 2, false: 1}[flush]; calls != want {
			t.Fatalf("flushed cache %v: %d attempts, want %d", flush, calls, want)
		}
	}
	if err := RunPipelined(ctx, rdb, s, nil, []any{1}, nil).Err(); err == nil || errors.Is(err, redis.Nil) {
		t.Fatalf("script error not returned: %v", err)
	}
}
