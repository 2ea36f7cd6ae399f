-- Opens a turn log (redis-turn-log-scripts.ts): creates it at fence 0 with its
-- first items, if any (see write.lua for renewAt), and lists it as unfinished.
-- KEYS: meta, stream, unfinished.
-- ARGV: conversationId, userId, openTtlMs, nowMs, messageId, items...
-- Error replies: TURNLOG_EXISTS.
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.error_reply('TURNLOG_EXISTS') end
redis.call('DEL', KEYS[2])
local openTtl = tonumber(ARGV[3])
for i = 6, #ARGV do redis.call('XADD', KEYS[2], (i - 5) .. '-0', 'i', ARGV[i]) end
redis.call('HSET', KEYS[1], 'conversationId', ARGV[1], 'userId', ARGV[2], 'fence', 0,
  'length', #ARGV - 5, 'finished', 0)
redis.call('PEXPIRE', KEYS[1], openTtl)
if #ARGV > 5 then
  redis.call('HSET', KEYS[1], 'renewAt', tonumber(ARGV[4]) + math.floor(openTtl / 2))
  redis.call('PEXPIRE', KEYS[2], openTtl)
end
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[5])
return 1
