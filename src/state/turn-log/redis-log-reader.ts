// Reads one Redis turn log from an offset and follows it live: a catch-up
// XRANGE on the main connection, then the entries the shared follower
// (redis-log-follower.ts) hands over. Entries are matched to the reader's own
// offset by id, so duplicates are skipped and a gap is filled by fetching again.
import type { RedisClient } from '../../storage/redis-connections.ts'
import type { FollowListener, RedisLogFollower, StreamEntry } from './redis-log-follower.ts'
import {
  compareEntryIds,
  idBefore,
  parseEntryId,
  type TurnLogKeys,
} from './redis-turn-log-scripts.ts'

const FETCH_COUNT = 1_000

/** Entries waiting for one reader, and a way to wait for more. */
class Inbox implements FollowListener {
  private buffer: StreamEntry[] = []
  private waiter: (() => void) | undefined
  ended = false

  entries(list: StreamEntry[]): void {
    for (const entry of list) this.buffer.push(entry)
    this.waiter?.()
  }

  gone(): void {
    this.ended = true
    this.waiter?.()
  }

  take(): StreamEntry[] {
    return this.buffer.splice(0)
  }

  wait(signal?: AbortSignal): Promise<void> {
    if (this.buffer.length > 0 || this.ended || signal?.aborted) return Promise.resolve()
    return new Promise((resolve) => {
      const wake = () => {
        this.waiter = undefined
        signal?.removeEventListener('abort', wake)
        resolve()
      }
      this.waiter = wake
      signal?.addEventListener('abort', wake)
    })
  }
}

interface Snapshot {
  length: number
  finished: boolean
  entries: StreamEntry[]
}

/** The log's meta and its entries after item `next` - 1; undefined when it is gone. */
async function fetchFrom(redis: RedisClient, keys: TurnLogKeys, next: number) {
  const results = await redis
    .pipeline()
    .hmget(keys.meta, 'length', 'finished')
    .xrange(keys.stream, `(${idBefore(next)}`, '+', 'COUNT', FETCH_COUNT)
    .exec()
  const [metaReply, rangeReply] = results ?? []
  if (!metaReply || !rangeReply) throw new Error('Redis pipeline was aborted')
  const [metaError, meta] = metaReply
  const [rangeError, range] = rangeReply
  if (metaError || rangeError) throw metaError ?? rangeError
  const [length, finished] = (meta ?? []) as (string | null)[]
  if (length === null || length === undefined) return undefined
  const entries = ((range ?? []) as [string, string[]][]).map(([id, fields]) => ({
    id,
    field: fields[0] ?? '',
    value: fields[1] ?? '',
  }))
  return { length: Number(length), finished: finished === '1', entries } satisfies Snapshot
}

/**
 * Yields the log's items from `offset` on, following it live through
 * `follower`, a batch for each fetch or hand-over; ends at the end entry, when
 * the log is gone, the follower closes, or signal aborts.
 */
export async function* readRemoteLog(
  redis: RedisClient,
  follower: RedisLogFollower,
  keys: TurnLogKeys,
  offset: number,
  signal?: AbortSignal,
): AsyncGenerator<readonly string[]> {
  let next = offset
  let known = 0 // the log's length as far as seen
  let inbox: Inbox | undefined
  try {
    let fetch = true
    while (!signal?.aborted) {
      let entries: StreamEntry[]
      let snapshot: Snapshot | undefined
      if (fetch) {
        snapshot = await fetchFrom(redis, keys, next)
        if (!snapshot) return
        known = Math.max(known, snapshot.length)
        entries = snapshot.entries
      } else {
        await inbox?.wait(signal)
        if (!inbox || inbox.ended || signal?.aborted) return
        entries = inbox.take()
      }
      fetch = false
      let ended = false
      const batch: string[] = []
      for (const { id, value } of entries) {
        const [ms, seq] = parseEntryId(id)
        if (seq === 1) {
          // The end entry of a log of `ms` items.
          ended = ms <= next
          fetch = !ended
          break
        }
        const index = ms - 1
        known = Math.max(known, ms)
        if (index < next) continue
        if (index > next) {
          fetch = true
          break
        }
        batch.push(value)
        next++
      }
      if (batch.length > 0) yield batch
      if (signal?.aborted) return
      if (ended || (snapshot?.finished && next >= snapshot.length)) return
      if (snapshot && snapshot.entries.length === FETCH_COUNT) fetch = true
      if (!inbox && !fetch) {
        // Caught up: follow from here (or from the end, for an offset past it).
        inbox = new Inbox()
        const cursor = idBefore(Math.min(next, known))
        const shared = follower.watch(keys, cursor, inbox)
        if (shared === undefined) return
        fetch = compareEntryIds(shared, cursor) > 0
      }
    }
  } finally {
    if (inbox) follower.unwatch(keys.stream, inbox)
  }
}
