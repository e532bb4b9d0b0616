-- item_restore.lua: the repair of items a Redis lost (a restart empty, a
-- failover to a replica that missed writes, a FLUSHALL), from the
-- daemon's journal (edge/ledger RestoreItems). Two modes:
--
-- "catalog": for items Redis still holds, the catalog entry the journal
--   recorded, by catalog_apply.lua's rules (a store entry beats _all, a
--   lower revision of the same source never replaces a higher one, the
--   same revision changes nothing: a local override made since stays).
--   Items Redis lacks — no name: never there, or only a stock a refund's
--   replay left — are not created (their stock is not known here) but
--   listed for the "create" mode.
-- "create": each item Redis lacks, whole: name, price, the stock the
--   journal expects, the active flag and catalog revision. An item Redis
--   holds by then (a local PUT meanwhile) is left as it is.
--
-- KEYS[i]  item   pe:{S}:item:<barcode>
-- ARGV[1]  mode, then five per key from ARGV[5i-3]:
--   "catalog": name, price_cents, active "1"|"0", revision ("0": the
--              journal has no catalog entry of it), source "store"|"all"
--   "create":  name, price_cents, stock, active, revision|"0", source
--              (six per key from ARGV[6i-4])
-- Money and stock stay strings: Lua numbers are doubles.
--
-- Returns "catalog": {applied, i, j, …} (the count of entries taken, then
-- the indexes of the keys Redis lacks); "create": {created}.

local mode = ARGV[1]
if mode == 'catalog' then
  local applied, missing = 0, {}
  for i, key in ipairs(KEYS) do
    local name, price, active, rev, src = ARGV[5 * i - 3], ARGV[5 * i - 2], ARGV[5 * i - 1], ARGV[5 * i], ARGV[5 * i + 1]
    local cur = redis.call('HMGET', key, 'name', 'cat_rev', 'cat_src')
    if not cur[1] then
      missing[#missing + 1] = i
    elseif rev ~= '0' then
      local take = true
      if cur[2] then
        local crev, nrev = tonumber(cur[2]), tonumber(rev)
        if src == 'all' and cur[3] == 'store' then take = false end
        if src == cur[3] and nrev <= crev then take = false end
      end
      if take then
        redis.call('HSET', key, 'name', name, 'price_cents', price, 'active', active, 'cat_rev', rev, 'cat_src', src)
        applied = applied + 1
      end
    end
  end
  local out = {applied}
  for _, i in ipairs(missing) do out[#out + 1] = i end
  return out
elseif mode == 'create' then
  local created = 0
  for i, key in ipairs(KEYS) do
    local b = 6 * i - 4
    if redis.call('HEXISTS', key, 'name') == 0 then
      redis.call('HSET', key, 'name', ARGV[b], 'price_cents', ARGV[b + 1], 'stock', ARGV[b + 2], 'active', ARGV[b + 3])
      if ARGV[b + 4] ~= '0' then
        redis.call('HSET', key, 'cat_rev', ARGV[b + 4], 'cat_src', ARGV[b + 5])
      end
      created = created + 1
    end
  end
  return {created}
end
return redis.error_reply('ERR item_restore.lua: unknown mode ' .. tostring(mode))
