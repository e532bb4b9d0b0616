-- ratelimit.lua — one rate-limit decision over several sliding windows,
-- atomically, on Redis time (edge/ratelimit).
--
-- KEYS[1]      promotion hash (fields coef_micro, starts_at, actions); may be absent
-- KEYS[2..n+1] one sorted-set hit log per level (score = Redis time in µs)
-- ARGV[1]      member for this request, unique across all callers
-- ARGV[2+3(i-1)], ARGV[3+3(i-1)], ARGV[4+3(i-1)] for level i:
--              unscaled limit, window in ms, scale name ("" = the level
--              scales only with a promotion that names no actions; else the
--              action name looked up in the promotion's actions list)
--
-- Every level is checked first; the hit is recorded in every level only
-- when every level allows it, so a denied request is recorded nowhere and a
-- key never holds more than its scaled limit of members (more only while a
-- promotion that raised the limit ends, for at most one window).
--
-- Returns {allowed (1|0), tightest level (1-based), its scaled limit, its
-- remaining, ms until a slot of it frees}. The tightest level is the one
-- with the least remaining; on a tie, the longest time until a slot frees.

-- The windows are not replicated (nor written to the AOF): they protect
-- the store's Redis and tills for seconds, a promoted replica starting
-- them empty only lets one window's worth of requests through again, and
-- replicating three sorted-set updates per request cost each replica
-- about a third of its CPU per sale (docs/performance.md). Redis >= 5.
redis.set_repl(redis.REPL_NONE)

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

-- The promotion applies from starts_at (unix ms) on; Redis expires the
-- hash at starts_at + ttl. Coefficients are fixed-point millionths so that
-- floor(limit * coefficient) is exact (0.57 * 100 is 57, not 56).
local coef, acts = nil, nil
local p = redis.call('HMGET', KEYS[1], 'coef_micro', 'starts_at', 'actions')
if p[1] and p[2] and now >= tonumber(p[2]) * 1000 then
  coef = tonumber(p[1])
  acts = ',' .. (p[3] or '') .. ','
end

local n = #KEYS - 1
local lim, win, cnt = {}, {}, {}
local allowed = true
for i = 1, n do
  local a = 2 + (i - 1) * 3
  local l = tonumber(ARGV[a])
  local w = tonumber(ARGV[a + 1]) * 1000
  local s = ARGV[a + 2]
  if coef and (acts == ',,' or (s ~= '' and string.find(acts, ',' .. s .. ',', 1, true))) then
    l = math.floor(l * coef / 1000000)
    if l < 1 then l = 1 end
  end
  local key = KEYS[i + 1]
  redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%.0f', now - w))
  local c = redis.call('ZCARD', key)
  lim[i], win[i], cnt[i] = l, w, c
  if c >= l then allowed = false end
end

if allowed then
  local score = string.format('%.0f', now)
  for i = 1, n do
    redis.call('ZADD', KEYS[i + 1], score, ARGV[1])
    redis.call('PEXPIRE', KEYS[i + 1], math.floor(win[i] / 1000))
    cnt[i] = cnt[i] + 1
  end
end

local best, bestRem, bestReset = 1, nil, nil
for i = 1, n do
  local rem = lim[i] - cnt[i]
  if rem < 0 then rem = 0 end
  -- A slot frees when the hit that keeps the count at the limit leaves the
  -- window: the (cnt - lim + 1)-th oldest, or the oldest when under it.
  local reset = 0
  if cnt[i] > 0 then
    local idx = cnt[i] - lim[i]
    if idx < 0 then idx = 0 end
    local e = redis.call('ZRANGE', KEYS[i + 1], idx, idx, 'WITHSCORES')
    if e[2] then
      reset = tonumber(e[2]) + win[i] - now
      if reset < 0 then reset = 0 end
    end
  end
  if bestRem == nil or rem < bestRem or (rem == bestRem and reset > bestReset) then
    best, bestRem, bestReset = i, rem, reset
  end
end

return {allowed and 1 or 0, best, lim[best], bestRem, math.ceil(bestReset / 1000)}
