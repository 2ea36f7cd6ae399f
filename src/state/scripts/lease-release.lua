-- Releases a lease (redis-leases.ts) only while it still holds the caller's
-- token, and clears its wanted mark.
-- KEYS: lease, wanted. ARGV: token.
-- Returns 1 when the lease was wanted meanwhile, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return redis.call('DEL', KEYS[2])
end
return 0
