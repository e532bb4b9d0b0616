-- stock_adjust.lua: one stock adjustment (contract §6), a relative change,
-- so it never races a sale's HINCRBY; exactly once per idempotency key.
--
-- KEYS[1] item                 pe:{S}:item:<barcode>      (hash: stock)
-- KEYS[2] adjustment record    pe:{S}:adj:<key>           (hash)
--
-- ARGV[1] delta (a whole number, may be negative)
-- ARGV[2] adjustment id (kept if the key is new)
-- ARGV[3] fingerprint of the request
-- ARGV[4] seconds to keep the record
--
-- Returns {"ok", stock, adjustment_id} or
-- {"exists", stock, adjustment_id, fingerprint_matches(0/1)} or
-- {"unknown_item"} | {"insufficient_stock", stock}.

local rec = redis.call('HMGET', KEYS[2], 'id', 'stock', 'fp')
if rec[1] then
  local same = 0
  if rec[3] == ARGV[3] then same = 1 end
  return {'exists', rec[2], rec[1], same}
end
local stock = redis.call('HGET', KEYS[1], 'stock')
if not stock then return {'unknown_item'} end
local delta = tonumber(ARGV[1])
if tonumber(stock) + delta < 0 then return {'insufficient_stock', stock} end
local after = redis.call('HINCRBY', KEYS[1], 'stock', delta)
redis.call('HSET', KEYS[2], 'id', ARGV[2], 'stock', after, 'fp', ARGV[3])
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[4]))
return {'ok', tostring(after), ARGV[2]}
