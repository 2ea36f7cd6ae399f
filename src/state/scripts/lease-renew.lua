-- Renews any number of leases (redis-leases.ts), each only while it still
-- holds the caller's token.
-- KEYS: the lease keys. ARGV: the ttl, then each key's token.
-- Returns per key 1 (renewed) or 0 (not held).
local held = {}
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i + 1] then
    held[i] = redis.call('PEXPIRE', KEYS[i], ARGV[1])
  else
    held[i] = 0
  end
end
return held
