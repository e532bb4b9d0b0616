-- txn_complete.lua: mark a journaled sale or refund COMPLETED in Redis
-- (edge/ledger, best effort: a record left PROCESSING is recovered from
-- the journal).
--
-- KEYS[1] idempotency record  pe:{S}:idem:<terminal>:<key>
-- KEYS[2] payment token       pe:{S}:token:<key>  (only for token-form keys)
--
-- Both are marked only while they still exist. A completion can reach
-- another master than the sale did (it rides the next pipeline, and a
-- failover or split brain may come between): a bare COMPLETED record
-- written there would tell the repair that this master holds the sale
-- (its idempotency record exists) when its stock and counters never
-- moved, and the repair would skip it. An expired token is likewise not
-- brought back as a bare hash. Returns 1 when the record was marked, 0
-- when this Redis does not hold it (the repair re-applies the sale from
-- the journal).

if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'COMPLETED')
if KEYS[2] and redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HSET', KEYS[2], 'state', 'COMPLETED')
end
return 1
