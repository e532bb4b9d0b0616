-- txn.lua: one sale or refund, all or nothing (contract §3).
-- Every check comes before the first write, so a refusal changes nothing;
-- stock, the day's and hour's counters, the flow number and the stored
-- result change together in this one script.
--
-- KEYS[1] idempotency record  pe:{S}:idem:<terminal>:<key>   (hash)
-- KEYS[2] flow sequence       pe:{S}:seq
-- KEYS[3] daily counters      pe:{S}:daily:<YYYYMMDD>        (hash)
-- KEYS[4] hourly counters     pe:{S}:hourly:<YYYYMMDD>       (hash)
-- KEYS[5] payment token       pe:{S}:token:<key>             (hash, may not exist)
-- KEYS[6] refunded so far     pe:{S}:refunded:<original>     (hash, refunds only)
-- KEYS[7..] item per line     pe:{S}:item:<barcode>          (hash: name, price_cents, stock, active)
--
-- ARGV[1]  mode: sale | refund | batch (a past sale: no stock or item check)
--               | apply_sale | apply_refund (a journaled degraded
--                 transaction: effects only, exactly once by its record)
-- ARGV[2]  terminal id      ARGV[3]  fingerprint of the request
-- ARGV[4]  tender           ARGV[5]  total cents
-- ARGV[6]  hour "HH"        ARGV[7]  owner (daemon instance) ARGV[8] now (unix ms, for the record)
-- ARGV[9]  sequence floor: the journal's highest; the sequence never goes at or below it
-- ARGV[10] seconds to keep the idempotency record
-- ARGV[11] body after the flow number: '{"flow_no":"<n>",' .. ARGV[11] is the result
-- ARGV[12] token required: 1 when the key has the payment-token form
-- ARGV[13] flow number (apply mode only: the journaled one)
-- ARGV[14] number of lines, then per line: barcode, qty, sold qty, already refunded (journal)
--
-- Returns {"ok", flow_no, negative_stock_lines} or
-- {"exists", state, fingerprint_matches(0/1), flow_no, owner, at, body} or
-- {"token_invalid"} | {"unknown_item", barcode} |
-- {"insufficient_stock", barcode, stock} | {"refund_exceeds_sale", barcode, left}.

local mode, term, fp = ARGV[1], ARGV[2], ARGV[3]
local tender, total, hour = ARGV[4], tonumber(ARGV[5]), ARGV[6]
local nlines = tonumber(ARGV[14])
local isApply = (mode == 'apply_sale' or mode == 'apply_refund')
local isRefund = (mode == 'refund' or mode == 'apply_refund')

local rec = redis.call('HMGET', KEYS[1], 'state', 'fp', 'flow_no', 'owner', 'at', 'body')
if rec[1] then
  local same = 0
  if rec[2] == fp then same = 1 end
  return {'exists', rec[1], same, rec[3], rec[4] or '', rec[5] or '0', rec[6] or ''}
end

if mode == 'sale' or mode == 'refund' then
  local tok = redis.call('HMGET', KEYS[5], 'terminal', 'state')
  if tok[1] then
    if tok[1] ~= term or tok[2] ~= 'PENDING' then return {'token_invalid'} end
  elseif ARGV[12] == '1' then
    return {'token_invalid'} -- expired unused, or never issued
  end
end

-- Sum quantities per barcode: a barcode may appear on several lines.
local qty, order = {}, {}
for i = 0, nlines - 1 do
  local b = ARGV[15 + i * 4]
  if not qty[b] then
    qty[b] = 0
    order[#order + 1] = {b, 7 + i}
  end
  qty[b] = qty[b] + tonumber(ARGV[16 + i * 4])
end

if mode == 'sale' then
  for _, o in ipairs(order) do
    local it = redis.call('HMGET', KEYS[o[2]], 'stock', 'active')
    local stock = it[1]
    -- active '0': deactivated by HQ's catalog, unknown to the tills.
    if not stock or it[2] == '0' then return {'unknown_item', o[1]} end
    if tonumber(stock) < qty[o[1]] then return {'insufficient_stock', o[1], stock} end
  end
end
-- What refunds already took back per barcode: the larger of Redis's
-- count and the journal's (Redis may have lost some in a failover).
local before = {}
if isRefund then
  for i = 0, nlines - 1 do
    local b = ARGV[15 + i * 4]
    before[b] = math.max(tonumber(redis.call('HGET', KEYS[6], b) or '0'), tonumber(ARGV[18 + i * 4]))
    if mode == 'refund' and before[b] + qty[b] > tonumber(ARGV[17 + i * 4]) then
      return {'refund_exceeds_sale', b, tostring(tonumber(ARGV[17 + i * 4]) - before[b])}
    end
  end
end

-- Writes from here on.
local flow
if isApply then
  flow = ARGV[13]
else
  local seq = redis.call('INCR', KEYS[2])
  local floor = tonumber(ARGV[9])
  if seq <= floor then
    seq = floor + 1
    redis.call('SET', KEYS[2], seq)
  end
  flow = string.format('1%015d', seq)
end

local negative = 0
for _, o in ipairs(order) do
  local b = o[1]
  if isRefund then
    redis.call('HINCRBY', KEYS[o[2]], 'stock', qty[b])
  elseif isApply or mode == 'batch' then
    -- A sale that already happened: only count stock of items we know.
    if redis.call('EXISTS', KEYS[o[2]]) == 1 then
      if redis.call('HINCRBY', KEYS[o[2]], 'stock', -qty[b]) < 0 then negative = negative + 1 end
    end
  else
    redis.call('HINCRBY', KEYS[o[2]], 'stock', -qty[b])
  end
end
if isRefund then
  for b, q in pairs(qty) do
    redis.call('HSET', KEYS[6], b, before[b] + q)
  end
  redis.call('EXPIRE', KEYS[6], 400 * 86400)
end

local n, c = 'sales', 'sales_cents'
if isRefund then n, c = 'refunds', 'refund_cents' end
redis.call('HINCRBY', KEYS[3], 't:' .. term .. ':' .. n, 1)
redis.call('HINCRBY', KEYS[3], 't:' .. term .. ':' .. c, total)
redis.call('HINCRBY', KEYS[3], 'x:' .. tender .. ':' .. n, 1)
redis.call('HINCRBY', KEYS[3], 'x:' .. tender .. ':' .. c, total)
redis.call('HINCRBY', KEYS[4], hour .. ':' .. n, 1)
redis.call('HINCRBY', KEYS[4], hour .. ':' .. c, total)
redis.call('EXPIRE', KEYS[3], 400 * 86400)
redis.call('EXPIRE', KEYS[4], 400 * 86400)

local body = '{"flow_no":"' .. flow .. '",' .. ARGV[11]
local state = 'PROCESSING'
if isApply then state = 'COMPLETED' end
redis.call('HSET', KEYS[1], 'state', state, 'fp', fp, 'flow_no', flow, 'owner', ARGV[7], 'at', ARGV[8], 'body', body)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[10]))
if redis.call('EXISTS', KEYS[5]) == 1 then
  redis.call('HSET', KEYS[5], 'state', 'PROCESSING')
end
return {'ok', flow, negative}
