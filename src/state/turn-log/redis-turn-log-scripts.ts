// Entry ids and Lua scripts of the Redis TurnLogStore (redis-turn-logs.ts).
// Every write to a log runs in a script, so the fence check, the continuation
// check and the write are atomic. The writes of a batch, to many logs, run as
// one script call per slot: on one server (or primary) all of them, on a
// Cluster, whose scripts must stay in one slot, those of each slot.
//
// Keys (names: storage/keyspace.ts):
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
import { redisScript } from '../../storage/redis-script.ts'
import claimLua from './scripts/claim.lua' with { type: 'text' }
import openLua from './scripts/open.lua' with { type: 'text' }
import writeLua from './scripts/write.lua' with { type: 'text' }
import { TurnLogFencedError, TurnLogMissingError } from './turn-log-store.ts'

export { turnLogKeys, unfinishedKey } from '../../storage/keyspace.ts'

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

// Error replies carry these codes (Redis prefixes them with "ERR "); the
// scripts (scripts/*.lua) spell them out: a code renamed here must be renamed there.
const MISSING = 'TURNLOG_MISSING'
const FENCED = 'TURNLOG_FENCED'
const FINISHED = 'TURNLOG_FINISHED'
const EXISTS = 'TURNLOG_EXISTS'
const BROKEN = 'TURNLOG_BROKEN'
const GAP = 'TURNLOG_GAP'

/** Opens a log at fence 0 with its first items (scripts/open.lua). */
export const OPEN_SCRIPT = redisScript(openLua)

/** Writes to any number of logs in one call, one reply per write (scripts/write.lua). */
export const WRITE_SCRIPT = redisScript(writeLua)

/** Raises a log's fence for a new owner and answers its meta (scripts/claim.lua). */
export const CLAIM_SCRIPT = redisScript(claimLua)

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
