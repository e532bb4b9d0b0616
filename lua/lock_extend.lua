-- lock_extend.lua: compare-and-extend a job lock (edge/lock).
--
-- KEYS[1] the lock   ARGV[1] the owner's token   ARGV[2] time to live (ms)
--
-- Returns 1 when the token still held the lock and its expiry was reset,
-- 0 when it expired or another owner holds it.

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
