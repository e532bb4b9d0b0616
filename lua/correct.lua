-- correct.lua: the daily reconciliation's corrections, fenced (edge/ledger
-- Correct, run through edge/lock's Lock.Run). A reconciler whose lock was
-- taken over since it acquired it writes nothing: the fence check comes
-- first, in this same script, so no newer holder can slip in between.
--
-- KEYS[1] the lock's fence counter  pe:{S}:lock:<job>:fence
-- ARGV[1] the caller's fencing number
-- then per correction i (i = 1 ..): KEYS[1+i] its key and four arguments
-- ARGV[4i-2 .. 4i+1]: op and its operands
--   'counter' field delta ''   HINCRBY the counter hash (daily or hourly);
--                              the hash keeps txn.lua's 400-day expiry
--   'stock'   ''    delta ''   HINCRBY the item's stock, if the item exists
--   'item'    name  price stock  restore an item, only while still missing
--   'catalog' active rev  source the catalog entry of the item the 'item'
--                              before it restored (rev > 0): HQ's active flag
--                              and revision, on an item that has no entry
--                              (never over one Redis holds, newer or not)
-- Counter and stock corrections are deltas, so sales made meanwhile are
-- kept. Money (price) stays a string end to end: Lua numbers are doubles.
--
-- Returns the number of corrections, or an error reply starting FENCED
-- when ARGV[1] is no longer the fence counter's value.

local cur = redis.call('GET', KEYS[1])
if cur ~= ARGV[1] then
  return redis.error_reply('FENCED fence ' .. ARGV[1] .. ' is stale, current ' .. tostring(cur))
end

local n = #KEYS - 1
for i = 1, n do
  local key = KEYS[1 + i]
  local op, a, b, c = ARGV[4 * i - 2], ARGV[4 * i - 1], ARGV[4 * i], ARGV[4 * i + 1]
  if op == 'counter' then
    redis.call('HINCRBY', key, a, b)
    redis.call('EXPIRE', key, 400 * 86400)
  elseif op == 'stock' then
    if redis.call('EXISTS', key) == 1 then redis.call('HINCRBY', key, 'stock', b) end
  elseif op == 'item' then
    if redis.call('EXISTS', key) == 0 then
      redis.call('HSET', key, 'name', a, 'price_cents', b, 'stock', c)
    end
  elseif op == 'catalog' then
    if redis.call('HEXISTS', key, 'cat_rev') == 0 and redis.call('HEXISTS', key, 'name') == 1 then
      redis.call('HSET', key, 'active', a, 'cat_rev', b, 'cat_src', c)
    end
  else
    return redis.error_reply('ERR correct.lua: unknown op ' .. tostring(op))
  end
end
return n
