-- lock_acquire.lua: take a store-wide job lock (edge/lock).
--
-- KEYS[1] the lock          pe:{S}:lock:<job>        (string: the owner's token)
-- KEYS[2] its fence counter pe:{S}:lock:<job>:fence  (integer, never expires)
-- ARGV[1] the owner's token   ARGV[2] time to live (ms)
--
-- Returns the new holder's fencing number (> 0), or 0 when the lock is
-- held. The counter only ever grows, so the n-th holder's number is n.

if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0
