package lua

import (
	"context"
	"fmt"
	"testing"
)

// catalog_apply.lua: name, price and active from the catalog, never
// stock; a store entry beats _all; a lower revision never replaces a
// higher one of the same source; a full reload (force) takes anything.
func TestCatalogApplyScript(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	const key = "pe:{S}:item:A"
	type change struct {
		name, price, active, rev, src, force string
	}
	steps := []struct {
		what   string
		change change
		result string
		item   string // name price_cents stock active cat_rev cat_src after the step
	}{
		{"a new item starts with stock 0", change{"Milk", "350", "1", "5", "all", "0"}, "[applied 0]", "[Milk 350 0 1 5 all]"},
		{"a newer _all revision", change{"Milk 1l", "360", "1", "7", "all", "0"}, "[applied 0]", "[Milk 1l 360 0 1 7 all]"},
		{"the same revision again", change{"Milk 1l", "360", "1", "7", "all", "0"}, "[same 0]", "[Milk 1l 360 0 1 7 all]"},
		{"an older _all revision", change{"Old", "1", "1", "6", "all", "0"}, "[skipped stale]", "[Milk 1l 360 0 1 7 all]"},
		{"a store entry beats _all even when older", change{"Milk S", "340", "1", "3", "store", "0"}, "[applied 0]", "[Milk S 340 0 1 3 store]"},
		{"_all after a store entry", change{"Milk 2", "999", "1", "9", "all", "0"}, "[skipped store_wins]", "[Milk S 340 0 1 3 store]"},
		{"an older store revision", change{"Old", "1", "1", "2", "store", "0"}, "[skipped stale]", "[Milk S 340 0 1 3 store]"},
		{"the store entry deactivated", change{"Milk S", "340", "0", "10", "store", "0"}, "[applied 0]", "[Milk S 340 0 0 10 store]"},
		{"a full reload takes a lower revision", change{"Milk R", "300", "1", "1", "all", "1"}, "[applied 0]", "[Milk R 300 0 1 1 all]"},
	}
	for _, s := range steps {
		c := s.change
		res, err := MustScript("catalog_apply.lua").Run(ctx, rdb, []string{key}, c.name, c.price, c.active, c.rev, c.src, c.force).Slice()
		if err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := fmt.Sprint(res); got != s.result {
			t.Errorf("%s: result %s, want %s", s.what, got, s.result)
		}
		item, _ := rdb.HMGet(ctx, key, "name", "price_cents", "stock", "active", "cat_rev", "cat_src").Result()
		if got := fmt.Sprint(item); got != s.item {
			t.Errorf("%s: item %s, want %s", s.what, got, s.item)
		}
	}

	// Stock is the store's: a sale's HINCRBY survives every catalog change.
	rdb.HIncrBy(ctx, key, "stock", 12)
	res, _ := MustScript("catalog_apply.lua").Run(ctx, rdb, []string{key}, "Milk N", "310", "1", "11", "all", "0").Slice()
	if stock, _ := rdb.HGet(ctx, key, "stock").Result(); fmt.Sprint(res) != "[applied 12]" || stock != "12" {
		t.Errorf("after a change of a stocked item: %v, stock %s, want [applied 12] and stock 12", res, stock)
	}
}

// stock_adjust.lua: a relative change, once per key; refused (changing
// nothing) for an unknown item or a stock that would go below zero.
func TestStockAdjustScript(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	item, rec := "pe:{S}:item:A", "pe:{S}:adj:k1"
	run := func(keys []string, delta, id, fp string) string {
		t.Helper()
		res, err := MustScript("stock_adjust.lua").Run(ctx, rdb, keys, delta, id, fp, 3600).Slice()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(res)
	}
	if got := run([]string{item, rec}, "5", "id1", "fp1"); got != "[unknown_item]" {
		t.Fatalf("unknown item: %s", got)
	}
	rdb.HSet(ctx, item, "name", "a", "stock", 3)
	steps := []struct {
		keys                []string
		delta, id, fp, want string
	}{
		{[]string{item, rec}, "5", "id1", "fp1", "[ok 8 id1]"},
		{[]string{item, rec}, "5", "id2", "fp1", "[exists 8 id1 1]"},
		{[]string{item, rec}, "6", "id3", "fp2", "[exists 8 id1 0]"},
		{[]string{item, "pe:{S}:adj:k2"}, "-9", "id4", "fp3", "[insufficient_stock 8]"},
		{[]string{item, "pe:{S}:adj:k3"}, "-8", "id5", "fp4", "[ok 0 id5]"},
	}
	for _, s := range steps {
		if got := run(s.keys, s.delta, s.id, s.fp); got != s.want {
			t.Errorf("delta %s key %s: %s, want %s", s.delta, s.keys[1], got, s.want)
		}
	}
	if n, _ := rdb.Exists(ctx, "pe:{S}:adj:k2").Result(); n != 0 {
		t.Errorf("a refused adjustment left its record")
	}
}

// item_restore.lua: "catalog" applies the journal's entries to the items
// Redis holds by the catalog's rules and lists the ones it lacks;
// "create" makes those whole, and never touches an item Redis holds.
// catalog_apply.lua never makes an item the store knew (ARGV[7] "0").
func TestItemRestoreScript(t *testing.T) {
	rdb := startRedis(t)
	ctx := context.Background()
	k := func(b string) string { return "pe:{S}:item:" + b }
	rdb.HSet(ctx, k("OLD"), "name", "Milk", "price_cents", "300", "stock", "4", "active", "1", "cat_rev", "3", "cat_src", "all")
	rdb.HSet(ctx, k("SAME"), "name", "Local", "price_cents", "99", "stock", "2", "cat_rev", "5", "cat_src", "all")
	rdb.HSet(ctx, k("STORE"), "name", "S", "price_cents", "10", "stock", "1", "cat_rev", "2", "cat_src", "store")
	rdb.HSet(ctx, k("LOCAL"), "name", "L", "price_cents", "5", "stock", "8")
	rdb.HSet(ctx, k("PART"), "stock", "3") // only what a refund's replay left
	keys := []string{k("OLD"), k("SAME"), k("STORE"), k("LOCAL"), k("GONE"), k("PART")}
	res, err := MustScript("item_restore.lua").Run(ctx, rdb, keys, "catalog",
		"Milk", "320", "0", "7", "all", // newer: taken, stock kept
		"Milk", "350", "1", "5", "all", // same revision: the local override stays
		"S all", "11", "1", "9", "all", // _all under a store entry: kept
		"", "0", "1", "0", "", // a local item: nothing from the catalog
		"Gone", "100", "1", "4", "store",
		"Part", "100", "1", "0", "").Slice()
	if err != nil || fmt.Sprint(res) != "[1 5 6]" {
		t.Fatalf("catalog pass: %v %v, want [1 5 6] (one applied; GONE and PART missing)", res, err)
	}
	want := map[string]string{
		"OLD": "[Milk 320 4 0 7 all]", "SAME": "[Local 99 2 <nil> 5 all]", "STORE": "[S 10 1 <nil> 2 store]",
		"LOCAL": "[L 5 8 <nil> <nil> <nil>]", "GONE": "[<nil> <nil> <nil> <nil> <nil> <nil>]", "PART": "[<nil> <nil> 3 <nil> <nil> <nil>]",
	}
	fields := []string{"name", "price_cents", "stock", "active", "cat_rev", "cat_src"}
	for b, w := range want {
		if got, _ := rdb.HMGet(ctx, k(b), fields...).Result(); fmt.Sprint(got) != w {
			t.Errorf("after the catalog pass %s = %v, want %s", b, got, w)
		}
	}
	res, err = MustScript("item_restore.lua").Run(ctx, rdb, []string{k("GONE"), k("PART"), k("LOCAL")}, "create",
		"Gone", "100", "12", "0", "4", "store",
		"Part", "100", "7", "1", "0", "",
		"L2", "6", "0", "1", "0", "").Slice()
	if err != nil || fmt.Sprint(res) != "[2]" {
		t.Fatalf("create pass: %v %v, want [2]", res, err)
	}
	want = map[string]string{"GONE": "[Gone 100 12 0 4 store]", "PART": "[Part 100 7 1 <nil> <nil>]", "LOCAL": "[L 5 8 <nil> <nil> <nil>]"}
	for b, w := range want {
		if got, _ := rdb.HMGet(ctx, k(b), fields...).Result(); fmt.Sprint(got) != w {
			t.Errorf("after the create pass %s = %v, want %s", b, got, w)
		}
	}

	res, err = MustScript("catalog_apply.lua").Run(ctx, rdb, []string{k("LOST")}, "Lost", "100", "1", "9", "all", "0", "0").Slice()
	if n, _ := rdb.Exists(ctx, k("LOST")).Result(); err != nil || fmt.Sprint(res) != "[skipped missing]" || n != 0 {
		t.Errorf("a change of an item the store knew and redis lost: %v %v, exists %d; want [skipped missing], nothing made", res, err, n)
	}
}
