-- catalog_apply.lua: one item-master change from HQ's catalog (contract §6).
-- Sets name, price and the active flag, never stock; an item the catalog
-- creates starts with stock 0. The item keeps the revision and the source
-- of the catalog entry it last took, so that a store entry beats the _all
-- entry of the same barcode and a change never replaces a newer one.
--
-- KEYS[1] item   pe:{S}:item:<barcode>   (hash: name, price_cents, stock, active, cat_rev, cat_src)
--
-- ARGV[1] name   ARGV[2] price_cents (a string: money never goes through a Lua number)
-- ARGV[3] active "1" | "0"
-- ARGV[4] revision of the catalog entry
-- ARGV[5] source: "store" (<store_id>.<barcode>) | "all" (_all.<barcode>)
-- ARGV[6] "1" to take the change whatever the item holds (a full reload,
--         whose revisions may be lower than a recreated bucket's old ones)
-- ARGV[7] "0" when the store knew the item already (its journal has it):
--         Redis lacking it then lost it, and an item made here would have
--         stock 0 instead of the journal's — the repair restores it whole.
--         Absent or "1": an item new to the store, created with stock 0.
--
-- Returns {"applied", stock} | {"same", stock} (this very revision again:
-- a redelivery) | {"skipped", reason} with reason "store_wins", "stale" or
-- "missing" (ARGV[7] "0" and Redis lacks the item: nothing written).

local rev, src = tonumber(ARGV[4]), ARGV[5]
local cur = redis.call('HMGET', KEYS[1], 'cat_rev', 'cat_src', 'stock', 'name')
if not cur[4] and ARGV[7] == '0' then return {'skipped', 'missing'} end
if ARGV[6] ~= '1' and cur[1] then
  local crev, csrc = tonumber(cur[1]), cur[2]
  if src == 'all' and csrc == 'store' then return {'skipped', 'store_wins'} end
  if src == csrc then
    if rev == crev then return {'same', cur[3] or '0'} end
    if rev < crev then return {'skipped', 'stale'} end
  end
end
local stock = cur[3]
if not stock then
  stock = '0'
  redis.call('HSET', KEYS[1], 'stock', 0)
end
redis.call('HSET', KEYS[1], 'name', ARGV[1], 'price_cents', ARGV[2], 'active', ARGV[3],
  'cat_rev', ARGV[4], 'cat_src', src)
return {'applied', stock}
