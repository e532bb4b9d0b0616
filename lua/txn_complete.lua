-- txn_complete.lua: mark a journaled sale or refund COMPLETED in Redis
-- (edge/ledger, best effort: a record left PROCESSING is recovered from
-- the journal).
--
-- KEYS[1] idempotency record  pe:{S}:idem:<terminal>:<key>
-- KEYS[2] payment token       pe:{S}:token:<key>  (only for token-form keys)
--
-- The token is marked only while it still exists: an expired token is
-- not brought back as a bare hash; nor is the record: a master that never
-- had the sale (a split brain's new master, the script having run on the
-- cut-off old one) would otherwise hold a bare COMPLETED record, which the
-- re-apply takes for the sale and skips (issue 23). Returns 1.

if redis.call('EXISTS', KEYS[1]) == 0 then
  return 1
end
redis.call('HSET', KEYS[1], 'state', 'COMPLETED')
if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HSET', KEYS[2], 'state', 'COMPLETED')
end
return 1
