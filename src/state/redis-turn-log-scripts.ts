// Entry ids and Lua scripts of the Redis TurnLogStore (redis-turn-logs.ts).
// Every write to a log runs in a script, so the fence check, the continuation
// check and the write are atomic. The writes of a batch, to many logs, run as
// one script call per slot: on one server (or primary) all of them, on a
// Cluster, whose scripts must stay in one slot, those of each slot.
//
// Keys (names: keyspace.ts):
//   turnlog:{<messageId>}       stream: the items, then an end entry
//   turnlog:{<messageId>}:meta  hash: conversationId, userId, fence, length,
//                               finished, renewAt (when the open expiry is next
//                               renewed; absent until the stream exists)
//   turnlog:unfinished          sorted set: the message ids of logs not
//                               finished, scored by when they were opened (ms);
//                               on a Cluster one per slot, with the logs of
//                               that slot. A log that expired or was removed
//                               while open stays until the store's
//                               unfinished() sees it gone
// The meta hash exists exactly as long as the log does; the stream only once
// something was written. Both always carry the same expiry.
//
// Entry ids: item n (0-based) is `${n + 1}-0` with field `i`; finish adds the
// end entry `${length}-1` with field `e`, which sorts after the last item and
// before any id an item could take. So reading from offset n is "entries after
// `${n}-0`" (XREAD id / exclusive XRANGE start), and ids never leave a gap.
import { redisScript } from '../storage/redis-script.ts'
import { TurnLogFencedError, TurnLogMissingError } from './turn-log-store.ts'

export { turnLogKeys, unfinishedKey } from './keyspace.ts'

export interface TurnLogKeys {
  stream: string
  meta: string
}

/** The id after which reading from item `offset` starts. */
export const idBefore = (offset: number) => `${offset}-0`

/** A stream entry id as numbers: item n is [n + 1, 0], the end of n items [n, 1]. */
export function parseEntryId(id: string): [number, number] {
  const dash = id.indexOf('-')
  return [Number(id.slice(0, dash)), Number(id.slice(dash + 1))]
}

export function compareEntryIds(a: string, b: string): number {
  const [am, as] = parseEntryId(a)
  const [bm, bs] = parseEntryId(b)
  return am - bm || as - bs
}

// Error replies carry these codes (Redis prefixes them with "ERR ").
const MISSING = 'TURNLOG_MISSING'
const FENCED = 'TURNLOG_FENCED'
const FINISHED = 'TURNLOG_FINISHED'
const EXISTS = 'TURNLOG_EXISTS'
const BROKEN = 'TURNLOG_BROKEN'
const GAP = 'TURNLOG_GAP'

/**
 * KEYS: meta, stream, unfinished. ARGV: conversationId, userId, openTtlMs,
 * nowMs, messageId, items... Creates the log at fence 0 with its first items,
 * if any (see WRITE_SCRIPT for renewAt), and lists it as unfinished.
 */
export const OPEN_SCRIPT = redisScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.error_reply('${EXISTS}') end
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
return 1`)

/**
 * Writes to any number of logs in one call: the log batcher sends one per
 * batch (per slot, on a Cluster), so a batch costs one script call however
 * many logs it touches.
 * KEYS: the unfinished set, then meta and stream of each write, in pairs.
 * ARGV: nowMs, openTtlMs, retentionMs, then per write: kind (`a` append, `f`
 * finish), fence, item count, start (the offset an append's first item takes,
 * or -1: at the end), the items (for a finish, one: the message id, taken off
 * the unfinished set). Returns one reply per write, in order: for an append
 * the offset of its first item, for a finish the log's length, or an error
 * code (a string) when the fence check, the state or the stream refuses it;
 * one refused write changes nothing and leaves the others be.
 *
 * An append checks the fence and the state with one HMGET and adds its items
 * at the meta's `length`: XADD itself refuses an id at or below the stream's
 * last, so a stream ahead of its meta is caught without reading it. An append
 * with a start is sent again after a failure whose outcome was unknown: a log
 * already past its items means it landed then (it answers its start and
 * writes nothing); a log short of its start lost acknowledged writes (a
 * failover to a replica that had not got them): GAP:<length>, and the batcher
 * writes them again from its mirror if it can.
 * The open expiry is renewed on both keys only when the meta's `renewAt` has
 * passed (half the open expiry after the last renewal; a log opened without
 * items has none, so the append that creates its stream renews): an open log
 * expires between half and all of openTtlMs after its last append. A finish
 * adds the end entry and sets the retention expiry; finishing a finished log
 * changes nothing.
 */
export const WRITE_SCRIPT = redisScript(`
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
  if not m[1] then reply = '${MISSING}'
  elseif fence < tonumber(m[1]) then reply = '${FENCED}'
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
  elseif m[3] == '1' then reply = '${FINISHED}'
  elseif count == 0 then reply = tonumber(m[2])
  elseif start >= 0 and tonumber(m[2]) ~= start then reply = '${GAP}:' .. m[2]
  else
    local n = tonumber(m[2])
    reply = n
    local added = redis.pcall('XADD', stream, (n + 1) .. '-0', 'i', ARGV[first])
    if type(added) == 'table' and added.err then reply = '${BROKEN}'
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
return replies`)

/**
 * KEYS: meta, stream. ARGV: fence, openTtlMs. Raises the fence (an open log's
 * expiry is refreshed). Returns nil when missing, else
 * [conversationId, userId, length, finished].
 */
export const CLAIM_SCRIPT = redisScript(`
local m = redis.call('HMGET', KEYS[1], 'fence', 'conversationId', 'userId', 'length', 'finished')
if not m[1] then return false end
if tonumber(ARGV[1]) < tonumber(m[1]) then return redis.error_reply('${FENCED}') end
redis.call('HSET', KEYS[1], 'fence', ARGV[1])
if m[5] ~= '1' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return {m[2], m[3], m[4], m[5]}`)

/** The length of a log that lost acknowledged items, from a write's GAP reply; else undefined. */
export function gapLength(reply: unknown): number | undefined {
  if (typeof reply !== 'string' || !reply.startsWith(`${GAP}:`)) return undefined
  const length = Number(reply.slice(GAP.length + 1))
  return Number.isSafeInteger(length) ? length : undefined
}

/** The port's error for a script's error reply or code (other errors pass through). */
export function turnLogError(error: Error | string, messageId: string): Error {
  const message = typeof error === 'string' ? error : error.message
  if (message.includes(MISSING)) return new TurnLogMissingError(messageId)
  if (message.includes(FENCED)) return new TurnLogFencedError(messageId)
  if (message.includes(FINISHED)) return new Error(`turn log ${messageId} is finished`)
  if (message.includes(EXISTS)) return new Error(`turn log ${messageId} already exists`)
  if (message.includes(BROKEN)) return new Error(`turn log ${messageId}: stream and meta disagree`)
  if (message.includes(GAP))
    return new Error(
      `turn log ${messageId} lost items it had acknowledged (a failover to a stale replica)`,
    )
  return typeof error === 'string' ? new Error(`turn log ${messageId}: ${error}`) : error
}
