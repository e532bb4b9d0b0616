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
-- KEYS[7..6+lines] item per line pe:{S}:item:<barcode>       (hash: name, price_cents, stock, active)
-- KEYS[7+lines..] (optional) pairs: idempotency record, payment token of
--          sales and refunds the daemon journaled since its last call, to
--          mark COMPLETED (what txn_complete.lua does, riding in this call
--          instead of a script of its own, issue 26): each record only
--          while it exists, its token only then and only while it exists,
--          whatever this call's own outcome; a refusal changes nothing
--          of its own sale.
--
-- ARGV[1]  mode: sale | refund | batch (a past sale: no stock or item check)
--               | apply_sale | apply_refund (a journaled degraded
--                 transaction: effects only, exactly once by its record)
-- ARGV[2]  terminal id      ARGV[3]  fingerprint of the request
-- ARGV[4]  tender           ARGV[5]  total cents
-- ARGV[6]  hour "HH"        ARGV[7]  owner (daemon instance) ARGV[8] now (unix ms, for the record)
-- ARGV[9]  sequence floor: the journal's highest; the sequence never goes at or below it
-- ARGV[10] seconds to keep the idempotency record
-- ARGV[11] the result after its flow number, packed by the daemon
--          (edge/ledger packRest: a form byte, then the rest plain or raw
--          DEFLATE-compressed; '{"flow_no":"<n>",' .. rest is the result). Stored as is in field rz, opaque to this script;
--          a ~1 MB batch's records cost a fraction of their JSON (issue 22).
-- ARGV[12] token required: 1 when the key has the payment-token form
-- ARGV[13] flow number (apply mode only: the journaled one)
-- ARGV[14] number of lines, then per line: barcode, qty, sold qty, already refunded (journal)
-- ARGV[15 + 4 × lines] (optional) max_sale_cents: the largest total accepted;
--          absent → 10^15 (wire.MaxSaleCentsLimit)
--
-- Money never becomes a Lua number: Lua numbers are doubles, exact only up
-- to 2^53, and a double passed to redis.call turns into "1e+17", which
-- HINCRBY refuses. Amounts and quantities stay decimal strings; the checks
-- below compare and add them as exact pairs (hi, lo) = hi × 10^9 + lo, and
-- the strings go to HINCRBY unchanged (Redis adds int64 exactly). Every
-- counter the script will increment is checked for int64 overflow before
-- the first write, since Redis does not roll a script back.
--
-- Returns {"ok", flow_no, negative_stock_lines} or
-- {"exists", state, fingerprint_matches(0/1), flow_no, owner, at, body, rz} or
-- (body: the whole result, records of the old layout; rz: the compressed
-- rest, records of this one; one of the two is '')
-- {"token_invalid"} | {"unknown_item", barcode} |
-- {"insufficient_stock", barcode, stock} | {"refund_exceeds_sale", barcode, left} |
-- {"refund_repriced", barcode} (another refund of the sale landed since it was priced) |
-- {"invalid_amount", what, value} (a total, quantity or count that is not a
-- canonical integer or is out of bounds) | {"invalid_argument", what} |
-- {"counter_overflow", key, field} | {"corrupt", key, field} (a stored value
-- that is not an integer). Every refusal changes nothing.

-- Exact int64 arithmetic on pairs {hi, lo}: v = hi × 10^9 + lo, 0 ≤ lo < 10^9.
-- |hi| < 2 × 10^10 in every intermediate result, so doubles hold it exactly.
local B = 1000000000
local MAX = {9223372036, 854775807}  -- 2^63 - 1
local MIN = {-9223372037, 145224192} -- -2^63
local ZERO = {0, 0}
local function less(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end
local function inRange(v) return not less(MAX, v) and not less(v, MIN) end
local function add(a, b)
  local hi, lo = a[1] + b[1], a[2] + b[2]
  if lo >= B then hi, lo = hi + 1, lo - B end
  return {hi, lo}
end
local function neg(a)
  if a[2] == 0 then return {-a[1], 0} end
  return {-a[1] - 1, B - a[2]}
end
-- int parses a canonical decimal int64 ("0", "-5", "42"; no sign +, no
-- leading zero, no space) or returns nil.
local function int(s)
  if type(s) ~= 'string' then return nil end
  local negative, d = false, s
  if string.sub(s, 1, 1) == '-' then negative, d = true, string.sub(s, 2) end
  if #d == 0 or #d > 19 or not string.match(d, '^%d+$') then return nil end
  if (#d > 1 or negative) and string.sub(d, 1, 1) == '0' then return nil end
  local v
  if #d > 9 then
    v = {tonumber(string.sub(d, 1, #d - 9)), tonumber(string.sub(d, #d - 8))}
  else
    v = {0, tonumber(d)}
  end
  if negative then v = neg(v) end
  if not inRange(v) then return nil end
  return v
end
local function str(v)
  if v[1] < 0 then return '-' .. str(neg(v)) end
  if v[1] == 0 then return string.format('%.0f', v[2]) end
  return string.format('%.0f%09.0f', v[1], v[2])
end

local mode, term, fp = ARGV[1], ARGV[2], ARGV[3]
local tender, hour = ARGV[4], ARGV[6]
local isApply = (mode == 'apply_sale' or mode == 'apply_refund')
local isRefund = (mode == 'refund' or mode == 'apply_refund')

-- The completion marks first: they belong to other, journaled sales, so
-- none of this call's answers may skip them. Only on a well-formed call
-- (a count of lines and whole pairs after the items).
do
  local n = tonumber(ARGV[14])
  if n and n >= 0 and n == math.floor(n) and #KEYS >= 6 + n and (#KEYS - 6 - n) % 2 == 0 then
    for i = 7 + n, #KEYS, 2 do
      if redis.call('EXISTS', KEYS[i]) == 1 then
        redis.call('HSET', KEYS[i], 'state', 'COMPLETED')
        if redis.call('EXISTS', KEYS[i + 1]) == 1 then
          redis.call('HSET', KEYS[i + 1], 'state', 'COMPLETED')
        end
      end
    end
  end
end

local rec = redis.call('HMGET', KEYS[1], 'state', 'fp', 'flow_no', 'owner', 'at', 'body', 'rz')
if rec[1] then
  local same = 0
  if rec[2] == fp then same = 1 end
  return {'exists', rec[1], same, rec[3], rec[4] or '', rec[5] or '0', rec[6] or '', rec[7] or ''}
end

-- The arguments, before anything else: a malformed one refuses the call.
local nl = int(ARGV[14])
if not nl or nl[1] ~= 0 or nl[2] > 10000 then return {'invalid_argument', 'lines'} end
local nlines = nl[2]
if #ARGV ~= 14 + nlines * 4 and #ARGV ~= 15 + nlines * 4 then return {'invalid_argument', 'argv'} end
if #KEYS < 6 + nlines or (#KEYS - 6 - nlines) % 2 ~= 0 then return {'invalid_argument', 'keys'} end
local maxCents = {1000000, 0} -- 10^15
if #ARGV == 15 + nlines * 4 then
  maxCents = int(ARGV[15 + nlines * 4])
  if not maxCents or less(maxCents, {0, 1}) then return {'invalid_argument', 'max_sale_cents'} end
end
local total = int(ARGV[5])
if not total or less(total, ZERO) or less(maxCents, total) then
  return {'invalid_amount', 'total_cents', ARGV[5]}
end
if not int(ARGV[9]) or not int(ARGV[10]) then return {'invalid_argument', 'seq_floor_or_ttl'} end

if mode == 'sale' or mode == 'refund' then
  local tok = redis.call('HMGET', KEYS[5], 'terminal', 'state')
  if tok[1] then
    if tok[1] ~= term or tok[2] ~= 'PENDING' then return {'token_invalid'} end
  elseif ARGV[12] == '1' then
    return {'token_invalid'} -- expired unused, or never issued
  end
elseif mode == 'batch' then
  -- A past sale may name its own till's token (issued, then the link
  -- went down), never another till's: that would mark it PROCESSING and
  -- fail that till's sale (issue 22 finding 9).
  local owner = redis.call('HGET', KEYS[5], 'terminal')
  if owner and owner ~= term then return {'token_invalid'} end
end

-- Sum quantities per barcode: a barcode may appear on several lines.
local qty, order, sold, jrRefunded = {}, {}, {}, {}
for i = 0, nlines - 1 do
  local b = ARGV[15 + i * 4]
  local q, s, r = int(ARGV[16 + i * 4]), int(ARGV[17 + i * 4]), int(ARGV[18 + i * 4])
  if not q or not less(ZERO, q) then return {'invalid_amount', 'qty', ARGV[16 + i * 4]} end
  if not s or less(s, ZERO) or not r or less(r, ZERO) then return {'invalid_amount', 'sold_or_refunded', b} end
  sold[i], jrRefunded[i] = s, r
  if not qty[b] then
    qty[b] = ZERO
    order[#order + 1] = {b, 7 + i}
  end
  qty[b] = add(qty[b], q)
  if not inRange(qty[b]) then return {'invalid_amount', 'qty', ARGV[16 + i * 4]} end
end

-- stored reads an integer field (absent = 0); nil when it is not one.
local function stored(key, field)
  local v = redis.call('HGET', key, field)
  if not v then return ZERO end
  return int(v)
end

-- Stock: enough for a sale; every change within int64.
for _, o in ipairs(order) do
  local b, key = o[1], KEYS[o[2]]
  local known = redis.call('EXISTS', key) == 1
  if mode == 'sale' and not known then return {'unknown_item', b} end
  -- active '0': deactivated by HQ's catalog, unknown to the tills.
  if mode == 'sale' and redis.call('HGET', key, 'active') == '0' then return {'unknown_item', b} end
  if known or isRefund then
    local stock = stored(key, 'stock')
    if not stock then return {'corrupt', key, 'stock'} end
    if mode == 'sale' and less(stock, qty[b]) then return {'insufficient_stock', b, str(stock)} end
    local after
    if isRefund then after = add(stock, qty[b]) else after = add(stock, neg(qty[b])) end
    if not inRange(after) then return {'counter_overflow', key, 'stock'} end
  end
end
-- What refunds already took back per barcode: the larger of Redis's
-- count and the journal's (Redis may have lost some in a failover).
local before = {}
if isRefund then
  for i = 0, nlines - 1 do
    local b = ARGV[15 + i * 4]
    local r = stored(KEYS[6], b)
    if not r then return {'corrupt', KEYS[6], b} end
    -- A refund is priced after the units already refunded (ARGV's
    -- count): Redis holding more means another refund landed since the
    -- daemon priced this one, which would price some units twice.
    if mode == 'refund' and less(jrRefunded[i], r) then return {'refund_repriced', b} end
    if less(r, jrRefunded[i]) then r = jrRefunded[i] end
    before[b] = r
    local after = add(r, qty[b])
    if not inRange(after) then return {'counter_overflow', KEYS[6], b} end
    if mode == 'refund' and less(sold[i], after) then
      return {'refund_exceeds_sale', b, str(add(sold[i], neg(r)))}
    end
  end
end

-- The day's and hour's counters this call increments.
local n, c = 'sales', 'sales_cents'
if isRefund then n, c = 'refunds', 'refund_cents' end
local counters = {
  {KEYS[3], 't:' .. term .. ':' .. n, {0, 1}}, {KEYS[3], 't:' .. term .. ':' .. c, total},
  {KEYS[3], 'x:' .. tender .. ':' .. n, {0, 1}}, {KEYS[3], 'x:' .. tender .. ':' .. c, total},
  {KEYS[4], hour .. ':' .. n, {0, 1}}, {KEYS[4], hour .. ':' .. c, total},
}
local day = redis.call('HMGET', KEYS[3], counters[1][2], counters[2][2], counters[3][2], counters[4][2])
local hr = redis.call('HMGET', KEYS[4], counters[5][2], counters[6][2])
local now = {day[1], day[2], day[3], day[4], hr[1], hr[2]}
for i, k in ipairs(counters) do
  local cur = ZERO
  if now[i] then cur = int(now[i]) end
  if not cur then return {'corrupt', k[1], k[2]} end
  if not inRange(add(cur, k[3])) then return {'counter_overflow', k[1], k[2]} end
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
local unstocked = {} -- barcodes whose stock this call left alone (txn_undo.lua)
for _, o in ipairs(order) do
  local b = o[1]
  if isRefund then
    redis.call('HINCRBY', KEYS[o[2]], 'stock', str(qty[b]))
  elseif isApply or mode == 'batch' then
    -- A sale that already happened: only count stock of items we know.
    if redis.call('EXISTS', KEYS[o[2]]) == 1 then
      if redis.call('HINCRBY', KEYS[o[2]], 'stock', str(neg(qty[b]))) < 0 then negative = negative + 1 end
    else
      unstocked[#unstocked + 1] = b
    end
  else
    redis.call('HINCRBY', KEYS[o[2]], 'stock', str(neg(qty[b])))
  end
end
if isRefund then
  for b, q in pairs(qty) do
    redis.call('HSET', KEYS[6], b, str(add(before[b], q)))
  end
  redis.call('EXPIRE', KEYS[6], 400 * 86400)
end

for _, k in ipairs(counters) do
  redis.call('HINCRBY', k[1], k[2], str(k[3]))
end
redis.call('EXPIRE', KEYS[3], 400 * 86400)
redis.call('EXPIRE', KEYS[4], 400 * 86400)

local state = 'PROCESSING'
if isApply then state = 'COMPLETED' end
redis.call('HSET', KEYS[1], 'state', state, 'fp', fp, 'flow_no', flow, 'owner', ARGV[7], 'at', ARGV[8], 'rz', ARGV[11])
-- What txn_undo.lua needs to take this call back exactly: the stock it
-- did not touch, the token's state before.
if #unstocked > 0 then redis.call('HSET', KEYS[1], 'unstocked', table.concat(unstocked, ' ')) end
-- Only this till's own token: a degraded sale was journaled without the
-- token check, and its apply must not mark another till's token (that
-- till's sale with it would fail, issue 22 finding 9). The sale is
-- applied all the same: it happened.
if redis.call('HGET', KEYS[5], 'terminal') == term then
  redis.call('HSET', KEYS[1], 'token_was', redis.call('HGET', KEYS[5], 'state') or '')
  redis.call('HSET', KEYS[5], 'state', 'PROCESSING')
end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[10]))
return {'ok', flow, negative}
