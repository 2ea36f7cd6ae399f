-- Claims a turn log for a new owner: raises the fence (an open log's expiry
-- is refreshed).
-- KEYS: meta, stream. ARGV: fence, openTtlMs.
-- Returns nil when missing, else [conversationId, userId, length, finished];
-- error reply TURNLOG_FENCED when the fence given is below the log's.
local m = redis.call('HMGET', KEYS[1], 'fence', 'conversationId', 'userId', 'length', 'finished')
if not m[1] then return false end
if tonumber(ARGV[1]) < tonumber(m[1]) then return redis.error_reply('TURNLOG_FENCED') end
redis.call('HSET', KEYS[1], 'fence', ARGV[1])
if m[5] ~= '1' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return {m[2], m[3], m[4], m[5]}
