-- lock_release.lua: compare-and-delete a job lock (edge/lock), so a
-- holder whose lock expired never deletes its successor's.
--
-- KEYS[1] the lock   ARGV[1] the owner's token
--
-- Returns 1 when deleted, 0 when the token no longer held it.

if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
