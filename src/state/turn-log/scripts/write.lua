-- Writes to any number of turn logs in one call: the log batcher sends one
-- per batch (per slot, on a Cluster), so a batch costs one script call however
-- many logs it touches.
-- KEYS: the unfinished set, then meta and stream of each write, in pairs.
-- ARGV: nowMs, openTtlMs, retentionMs, then per write: kind (`a` append, `f`
-- finish), fence, item count, start (the offset an append's first item takes,
-- the length a finish expects, or -1: at the end, whatever the length), the
-- items (for a finish, one: the message id, taken off the unfinished set). Returns one reply per write, in order: for an append
-- the offset of its first item, for a finish the log's length, or an error
-- code (a string: TURNLOG_MISSING, _FENCED, _FINISHED, _GAP:<length>,
-- _BROKEN) when the fence check, the state or the stream refuses it; one
-- refused write changes nothing and leaves the others be.
--
-- An append checks the fence and the state with one HMGET and adds its items
-- at the meta's `length`: XADD itself refuses an id at or below the stream's
-- last, so a stream ahead of its meta is caught without reading it. An append
-- with a start is sent again after a failure whose outcome was unknown: a log
-- already past its items means it landed then (it answers its start and
-- writes nothing); a log short of its start lost acknowledged writes (a
-- failover to a replica that had not got them): GAP:<length>, and the batcher
-- writes them again from its mirror if it can. So does a finish whose log is
-- short of the length it expects: it would end the log without them.
-- The open expiry is renewed on both keys only when the meta's `renewAt` has
-- passed (half the open expiry after the last renewal; a log opened without
-- items has none, so the append that creates its stream renews): an open log
-- expires between half and all of openTtlMs after its last append. A finish
-- adds the end entry and sets the retention expiry; finishing a finished log
-- changes nothing.
local now = tonumber(ARGV[1])
local openTtl = tonumber(ARGV[2])
local a = 4
local replies = {}
for k = 2, #KEYS, 2 do
  local meta, stream = KEYS[k], KEYS[k + 1]
  local kind, fence, count = ARGV[a], tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local start = tonumber(ARGV[a + 3])
  local first = a + 4
  a = first + count
  local reply
  local m = redis.call('HMGET', meta, 'fence', 'length', 'finished', 'renewAt')
  if not m[1] then reply = 'TURNLOG_MISSING'
  elseif fence < tonumber(m[1]) then reply = 'TURNLOG_FENCED'
  elseif kind == 'f' and m[3] ~= '1' and start >= 0 and tonumber(m[2]) < start then
    reply = 'TURNLOG_GAP:' .. m[2]
  elseif kind == 'f' then
    reply = tonumber(m[2])
    if m[3] ~= '1' then
      redis.call('XADD', stream, m[2] .. '-1', 'e', '')
      redis.call('HSET', meta, 'finished', 1)
      redis.call('PEXPIRE', meta, ARGV[3])
      redis.call('PEXPIRE', stream, ARGV[3])
    end
    redis.call('ZREM', KEYS[1], ARGV[first])
  elseif start >= 0 and count > 0 and tonumber(m[2]) >= start + count then reply = start
  elseif m[3] == '1' then reply = 'TURNLOG_FINISHED'
  elseif count == 0 then reply = tonumber(m[2])
  elseif start >= 0 and tonumber(m[2]) ~= start then reply = 'TURNLOG_GAP:' .. m[2]
  else
    local n = tonumber(m[2])
    reply = n
    local added = redis.pcall('XADD', stream, (n + 1) .. '-0', 'i', ARGV[first])
    if type(added) == 'table' and added.err then reply = 'TURNLOG_BROKEN'
    else
      n = n + 1
      for i = first + 1, a - 1 do
        n = n + 1
        redis.call('XADD', stream, n .. '-0', 'i', ARGV[i])
      end
      if m[4] and now < tonumber(m[4]) then redis.call('HSET', meta, 'length', n)
      else
        redis.call('HSET', meta, 'length', n, 'renewAt', now + math.floor(openTtl / 2))
        redis.call('PEXPIRE', meta, openTtl)
        redis.call('PEXPIRE', stream, openTtl)
      end
    end
  end
  replies[#replies + 1] = reply
end
return replies
