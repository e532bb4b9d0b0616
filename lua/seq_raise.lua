-- seq_raise.lua: move the flow sequence up to a floor, never down
-- (edge/ledger repair: after a failover that lost acknowledged INCRs, the
-- next number must come after every number the journal holds).
--
-- KEYS[1] flow sequence  pe:{S}:seq
-- ARGV[1] floor: the journal's highest sequence number
--
-- Returns the sequence after the call.

local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local floor = tonumber(ARGV[1])
if cur < floor then
  redis.call('SET', KEYS[1], ARGV[1])
  return floor
end
return cur
