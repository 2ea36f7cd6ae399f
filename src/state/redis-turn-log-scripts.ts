// Key names, stream entry ids and Lua scripts of the Redis TurnLogStore
// (redis-turn-logs.ts). Every write to a log runs as one script over its two
// keys, so the fence check, the continuation check and the write are atomic.
//
// Keys (the `{messageId}` hash tag keeps both in one Cluster slot):
//   <prefix>{<messageId>}       stream: the items, then an end entry
//   <prefix>{<messageId>}:meta  hash: conversationId, userId, fence, length, finished
// The meta hash exists exactly as long as the log does; the stream only once
// something was written. Both always carry the same expiry.
//
// Entry ids: item n (0-based) is `${n + 1}-0` with field `i`; finish adds the
// end entry `${length}-1` with field `e`, which sorts after the last item and
// before any id an item could take. So reading from offset n is "entries after
// `${n}-0`" (XREAD id / exclusive XRANGE start), and ids never leave a gap.
import { createHash } from 'node:crypto'
import { TurnLogFencedError, TurnLogMissingError } from './turn-log-store.ts'

export interface TurnLogKeys {
  stream: string
  meta: string
}

/** The two keys of a log. */
export function turnLogKeys(prefix: string, messageId: string): TurnLogKeys {
  const stream = `${prefix}{${messageId}}`
  return { stream, meta: `${stream}:meta` }
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

/** KEYS: meta, stream. ARGV: conversationId, userId, openTtlMs. */
export const OPEN_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.error_reply('${EXISTS}') end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[1], 'conversationId', ARGV[1], 'userId', ARGV[2], 'fence', 0, 'length', 0, 'finished', 0)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`

// The fence check shared by append and finish; m = HMGET fence, length, finished.
const CHECK = `
local m = redis.call('HMGET', KEYS[1], 'fence', 'length', 'finished')
if not m[1] then return redis.error_reply('${MISSING}') end
if tonumber(ARGV[1]) < tonumber(m[1]) then return redis.error_reply('${FENCED}') end`

/**
 * KEYS: meta, stream. ARGV: fence, openTtlMs, items... Appends at the end,
 * after checking that the stream's last entry is the item the meta counts
 * last; refreshes the open expiry. Returns the offset of the first item.
 */
export const APPEND_SCRIPT = `${CHECK}
if m[3] == '1' then return redis.error_reply('${FINISHED}') end
local n = tonumber(m[2])
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
local top = last[1] and last[1][1] or false
if (n == 0 and top) or (n > 0 and top ~= n .. '-0') then return redis.error_reply('${BROKEN}') end
local start = n
for i = 3, #ARGV do
  n = n + 1
  redis.call('XADD', KEYS[2], n .. '-0', 'i', ARGV[i])
end
redis.call('HSET', KEYS[1], 'length', n)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return start`

/**
 * KEYS: meta, stream. ARGV: fence, retentionMs. Adds the end entry and sets
 * the retention expiry; finishing a finished log changes nothing. Returns the length.
 */
export const FINISH_SCRIPT = `${CHECK}
if m[3] == '1' then return tonumber(m[2]) end
redis.call('XADD', KEYS[2], m[2] .. '-1', 'e', '')
redis.call('HSET', KEYS[1], 'finished', 1)
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return tonumber(m[2])`

/**
 * KEYS: meta, stream. ARGV: fence, openTtlMs. Raises the fence (an open log's
 * expiry is refreshed). Returns nil when missing, else
 * [conversationId, userId, length, finished].
 */
export const CLAIM_SCRIPT = `
local m = redis.call('HMGET', KEYS[1], 'fence', 'conversationId', 'userId', 'length', 'finished')
if not m[1] then return false end
if tonumber(ARGV[1]) < tonumber(m[1]) then return redis.error_reply('${FENCED}') end
redis.call('HSET', KEYS[1], 'fence', ARGV[1])
if m[5] ~= '1' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[2])
end
return {m[2], m[3], m[4], m[5]}`

export const sha1 = (script: string) => createHash('sha1').update(script).digest('hex')

/** The port's error for a script's error reply (other errors pass through). */
export function turnLogError(error: Error, messageId: string): Error {
  const { message } = error
  if (message.includes(MISSING)) return new TurnLogMissingError(messageId)
  if (message.includes(FENCED)) return new TurnLogFencedError(messageId)
  if (message.includes(FINISHED)) return new Error(`turn log ${messageId} is finished`)
  if (message.includes(EXISTS)) return new Error(`turn log ${messageId} already exists`)
  if (message.includes(BROKEN)) return new Error(`turn log ${messageId}: stream and meta disagree`)
  return error
}
