-- txn_undo.lua: take back one txn.lua call whose sale or refund the
-- journal then refused (503 journal_unavailable, issue 22 finding 5), so
-- that a transaction the till was told failed is recorded nowhere: not in
-- Redis, and so not by start-up recovery either. A retry with the same key
-- then runs txn.lua afresh. The flow number it took stays unused (a gap).
--
-- KEYS as txn.lua: [1] record [2] sequence (unused) [3] daily [4] hourly
-- [5] payment token [6] refunded so far [7..] item per line.
-- ARGV[1] mode (sale | refund | batch)  ARGV[2] terminal  ARGV[3] fingerprint
-- ARGV[4] tender  ARGV[5] total cents  ARGV[6] hour "HH"  ARGV[7] owner
-- ARGV[8] flow number txn.lua answered  ARGV[9] number of lines, then per
-- line: barcode, qty.
--
-- Only the call it names is taken back: the record must be PROCESSING,
-- of this owner, fingerprint and flow number (a retry on another daemon,
-- or a record completed meanwhile, is left alone).
-- Returns {"undone"} or {"not_ours", state or ""} (nothing changed) or
-- {"invalid_argument", what}.

local mode, term, fp, tender, total, hour, owner, flow = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]
if mode ~= 'sale' and mode ~= 'refund' and mode ~= 'batch' then return {'invalid_argument', 'mode'} end
if not string.match(total, '^%d+$') then return {'invalid_argument', 'total'} end
local nlines = tonumber(ARGV[9])
if not nlines or nlines < 0 or nlines > 10000 or #ARGV ~= 9 + 2 * nlines then return {'invalid_argument', 'argv'} end
if #KEYS ~= 6 + nlines then return {'invalid_argument', 'keys'} end
for i = 0, nlines - 1 do
  if not string.match(ARGV[11 + i * 2], '^%d+$') then return {'invalid_argument', 'qty'} end
end

local rec = redis.call('HMGET', KEYS[1], 'state', 'owner', 'fp', 'flow_no', 'unstocked', 'token_was')
if rec[1] ~= 'PROCESSING' or rec[2] ~= owner or rec[3] ~= fp or rec[4] ~= flow then
  return {'not_ours', rec[1] or ''}
end
local skip = {}
if rec[5] then
  for b in string.gmatch(rec[5], '%S+') do skip[b] = true end
end
local isRefund = mode == 'refund'

-- Amounts stay decimal strings: '-' .. s is HINCRBY's exact negation.
local function negate(s) if s == '0' then return '0' end return '-' .. s end
for i = 0, nlines - 1 do
  local b, q, key = ARGV[10 + i * 2], ARGV[11 + i * 2], KEYS[7 + i]
  if isRefund then
    redis.call('HINCRBY', key, 'stock', negate(q))
    redis.call('HINCRBY', KEYS[6], b, negate(q))
  elseif not skip[b] and redis.call('EXISTS', key) == 1 then
    redis.call('HINCRBY', key, 'stock', q)
  end
end
local n, c = 'sales', 'sales_cents'
if isRefund then n, c = 'refunds', 'refund_cents' end
redis.call('HINCRBY', KEYS[3], 't:' .. term .. ':' .. n, -1)
redis.call('HINCRBY', KEYS[3], 't:' .. term .. ':' .. c, negate(total))
redis.call('HINCRBY', KEYS[3], 'x:' .. tender .. ':' .. n, -1)
redis.call('HINCRBY', KEYS[3], 'x:' .. tender .. ':' .. c, negate(total))
redis.call('HINCRBY', KEYS[4], hour .. ':' .. n, -1)
redis.call('HINCRBY', KEYS[4], hour .. ':' .. c, negate(total))
if rec[6] and redis.call('EXISTS', KEYS[5]) == 1 then
  if rec[6] == '' then
    redis.call('HDEL', KEYS[5], 'state')
  else
    redis.call('HSET', KEYS[5], 'state', rec[6])
  end
end
redis.call('DEL', KEYS[1])
return {'undone'}
