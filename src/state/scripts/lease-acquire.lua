-- Acquires a conversation's lease (redis-leases.ts): sets it only when absent,
-- else marks it wanted. The token is the Redis clock in microseconds, bumped
-- past the conversation's last token.
-- Redis >= 5 replicates script effects, not scripts, so TIME followed by a
-- write is allowed without redis.replicate_commands() (a no-op on Redis 7).
-- string.format('%d') because tostring() prints 16-digit numbers as 1.7e+15.
-- KEYS: lease, fence, wanted. ARGV: ttl, how long the fence is kept.
-- Returns the token, or nil when the lease is held.
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('SET', KEYS[3], 1, 'PX', ARGV[1])
  return false
end
redis.call('DEL', KEYS[3])
local time = redis.call('TIME')
local token = tonumber(time[1]) * 1000000 + tonumber(time[2])
local last = tonumber(redis.call('GET', KEYS[2]) or '0')
if token <= last then token = last + 1 end
local text = string.format('%d', token)
redis.call('SET', KEYS[2], text, 'PX', ARGV[2])
redis.call('SET', KEYS[1], text, 'PX', ARGV[1])
return token
