-- snapshot.lua: what the daily reconciliation compares with the journal,
-- read in one atomic step (edge/ledger Snapshot). The counters and stock
-- then hold exactly the transactions numbered up to the sequence read
-- (plus degraded ones applied before).
--
-- KEYS[1]                  flow sequence    pe:{S}:seq
-- KEYS[2 .. 1+n]           daily counters   pe:{S}:daily:<YYYYMMDD>   (n days)
-- KEYS[2+n .. 1+2n]        hourly counters  pe:{S}:hourly:<YYYYMMDD>  (same days)
-- KEYS[2+2n ..]            items            pe:{S}:item:<barcode>
-- ARGV[1] n, the number of days
--
-- Returns {sequence ('0' when unset), n daily HGETALLs, n hourly
-- HGETALLs, each item's stock field (nil when missing)}.

local out = {redis.call('GET', KEYS[1]) or '0'}
local nd = tonumber(ARGV[1])
for i = 2, 1 + 2 * nd do out[#out + 1] = redis.call('HGETALL', KEYS[i]) end
for i = 2 + 2 * nd, #KEYS do out[#out + 1] = redis.call('HGET', KEYS[i], 'stock') end
return out
