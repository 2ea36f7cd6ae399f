// The Redis TurnLogStore: one Redis Stream per log, shared by every instance
// and durable across a process dying (keys, entry ids and scripts:
// redis-turn-log-scripts.ts). Writes carry a fence checked by a Lua script,
// and go out in batches, one pipeline and one script call per round trip
// (redis-log-batcher.ts).
//
// Reading without per-reader polling or connections:
// - Readers of a log this process writes are served from its mirror
//   (redis-log-mirrors.ts), the items this process appended, fed when a batch
//   is acknowledged and dropped when the log is finished: they cost Redis
//   nothing. A mirror that may have gone stale is detached and its readers go
//   on from Redis at their offset.
// - Readers of a log another process writes share ONE blocking connection per
//   store (redis-log-follower.ts) after a catch-up XRANGE (redis-log-reader.ts).
//   A finish reaches them through the stream's end entry at once.
// A log removed or expired elsewhere ends the readers here within blockMs
// (a blocked XREAD does not notice a deleted key, so existence is checked).
// Nothing about a log stays in this process after finish (or remove).
//
// On a Cluster every script touches one slot: logs are spread over 256
// buckets (storage/keyspace.ts), each a hash tag with its own set of unfinished logs,
// and batches and sweeps send one call per bucket, one pipeline per node
// (redis-slots.ts); readers of other processes' logs poll
// (redis-log-follower.ts).
//
// The client must speak RESP2-shaped replies (ioredis' default) and carry no
// ioredis keyPrefix of its own; keys are prefixed with `keyPrefix` here.

import { turnLogBucket, turnLogBuckets } from '../../storage/keyspace.ts'
import { isCluster, type RedisClient } from '../../storage/redis-connections.ts'
import { pipelined } from '../../storage/redis-slots.ts'
import { RedisLogBatcher } from './redis-log-batcher.ts'
import { RedisLogFollower } from './redis-log-follower.ts'
import { RedisLogMirrors } from './redis-log-mirrors.ts'
import { readRemoteLog } from './redis-log-reader.ts'
import {
  CLAIM_SCRIPT,
  OPEN_SCRIPT,
  turnLogError,
  turnLogKeys,
  unfinishedKey,
} from './redis-turn-log-scripts.ts'
import type { TurnLogIdentity, TurnLogInfo, TurnLogStore } from './turn-log-store.ts'

export interface RedisTurnLogsOptions {
  /** An ioredis client connected to the state database; the caller closes it. */
  redis: RedisClient
  /** Prepended to every key; default `turnlog:`. */
  keyPrefix?: string
  /** How long a finished log stays readable. */
  retentionMs: number
  /** Expiry of an open log, renewed by appends (at most once per half of it); default 1 hour. */
  openTtlMs?: number
  /** Told of writes that gave up (redis-log-batcher.ts). */
  warn?: (message: string, error: unknown) => void
  /** Longest XREAD block, and how often followed logs are checked for existence; default 2 s. */
  blockMs?: number
}

/** A TurnLogStore on Redis Streams (durable: true), shared by every instance. */
export function createRedisTurnLogs(options: RedisTurnLogsOptions): TurnLogStore {
  const { redis, retentionMs } = options
  const prefix = options.keyPrefix ?? 'turnlog:'
  const openTtlMs = options.openTtlMs ?? 3_600_000
  const keys = (messageId: string) => turnLogKeys(prefix, messageId)
  const cluster = isCluster(redis)
  /** The set of unfinished logs a log is listed in: the one of its bucket, on a Cluster. */
  const unfinishedOf = (messageId: string) =>
    cluster ? unfinishedKey(prefix, turnLogBucket(messageId)) : unfinishedKey(prefix)
  /** Every set of unfinished logs. */
  const unfinishedSets = () =>
    cluster
      ? turnLogBuckets().map((bucket) => unfinishedKey(prefix, bucket))
      : [unfinishedKey(prefix)]
  const blockMs = options.blockMs ?? 2_000
  const mirrors = new RedisLogMirrors(redis, keys, openTtlMs, blockMs)
  const batcher = new RedisLogBatcher(
    redis,
    unfinishedOf,
    { openMs: openTtlMs, retentionMs },
    mirrors,
    options.warn,
  )
  const follower = new RedisLogFollower(redis, blockMs)
  let closed = false

  function assertOpen() {
    if (closed) throw new Error('turn log store is closed')
  }

  /** Items [from, to) of a log, at most 1,000; fewer when it is gone. */
  async function readRange(messageId: string, from: number, to: number): Promise<string[]> {
    const range = await redis.xrange(
      keys(messageId).stream,
      `${from + 1}-0`,
      `${to}-0`,
      'COUNT',
      1_000,
    )
    return range.map(([, fields]) => fields[1] ?? '')
  }

  return {
    durable: true,

    async open({ messageId, conversationId, userId }, items = []) {
      assertOpen()
      const { meta, stream } = keys(messageId)
      await OPEN_SCRIPT.run(
        redis,
        [meta, stream, unfinishedOf(messageId)],
        [conversationId, userId, openTtlMs, Date.now(), messageId, ...items],
      ).catch((error: Error) => Promise.reject(turnLogError(error, messageId)))
      // Its runner writes it under its lease's token, whatever the fence it was opened at.
      batcher.track(messageId, undefined, items.length)
      mirrors.opened(messageId, items)
    },

    async append(messageId, items, fence) {
      assertOpen()
      await batcher.write('append', messageId, keys(messageId), [...items], fence)
    },

    async claim(messageId, fence) {
      assertOpen()
      const { meta, stream } = keys(messageId)
      const reply = await CLAIM_SCRIPT.run(redis, [meta, stream], [fence, openTtlMs]).catch(
        (error: Error) => Promise.reject(turnLogError(error, messageId)),
      )
      if (!Array.isArray(reply)) return undefined
      const [conversationId, userId, length, finished] = reply.map(String)
      const info: TurnLogInfo = {
        messageId,
        conversationId: conversationId ?? '',
        userId: userId ?? '',
        length: Number(length),
        finished: finished === '1',
      }
      if (info.finished) batcher.untrack(messageId)
      else batcher.track(messageId, fence, info.length)
      // The first acknowledged append makes the mirror; a stale one must go.
      if (info.finished || mirrors.get(messageId)?.end !== info.length) mirrors.detach(messageId)
      return info
    },

    async finish(messageId, fence) {
      assertOpen()
      await batcher.write('finish', messageId, keys(messageId), [], fence)
    },

    async info(messageId) {
      const fields = ['conversationId', 'userId', 'length', 'finished'] as const
      const [conversationId, userId, length, finished] = await redis.hmget(
        keys(messageId).meta,
        ...fields,
      )
      if (conversationId == null || userId == null) return undefined
      return {
        messageId,
        conversationId,
        userId,
        length: Number(length),
        finished: finished === '1',
      }
    },

    async *read(messageId, offset, signal) {
      let next = Math.max(0, offset)
      while (!closed && !signal?.aborted) {
        const mirror = mirrors.get(messageId)
        if (!mirror) {
          yield* readRemoteLog(redis, follower, keys(messageId), next, signal)
          return
        }
        if (next < mirror.base) {
          // Written before this process took the log over: from Redis.
          const items = await readRange(messageId, next, mirror.base)
          if (items.length === 0) return
          yield items
          next += items.length
          continue
        }
        const resume = yield* mirror.follow(next, signal)
        if (resume === undefined) return
        next = resume
      }
    },

    async unfinished(olderThanMs, limit) {
      // One set, or on a Cluster one per bucket: one pipeline per node.
      const sets = unfinishedSets()
      const cutoff = Date.now() - olderThanMs
      const listed = await pipelined(
        redis,
        sets.map((key) => ({
          key,
          add: (pipeline) =>
            pipeline.zrangebyscore(key, '-inf', cutoff, 'WITHSCORES', 'LIMIT', 0, limit),
        })),
      )
      const found: { messageId: string; openedAt: number }[] = []
      for (const [error, reply] of listed) {
        if (error) throw error
        const flat = reply as string[]
        for (let at = 0; at + 1 < flat.length; at += 2)
          found.push({ messageId: flat[at] ?? '', openedAt: Number(flat[at + 1]) })
      }
      // Oldest first, across the sets.
      const ids = found
        .sort((a, b) => a.openedAt - b.openedAt)
        .slice(0, limit)
        .map((entry) => entry.messageId)
      if (ids.length === 0) return []
      const replies = await pipelined(
        redis,
        ids.map((id) => {
          const { meta } = keys(id)
          return {
            key: meta,
            add: (pipeline) => pipeline.hmget(meta, 'conversationId', 'userId', 'finished'),
          }
        }),
      )
      const open: TurnLogIdentity[] = []
      const gone: string[] = []
      ids.forEach((messageId, index) => {
        const [error, fields] = replies[index] ?? [new Error('missing reply'), null]
        if (error) throw error
        const [conversationId, userId, finished] = fields as (string | null)[]
        if (conversationId == null || userId == null || finished === '1') gone.push(messageId)
        else open.push({ messageId, conversationId, userId })
      })
      // Expired or removed while open: nothing left to end.
      await pipelined(
        redis,
        gone.map((id) => {
          const set = unfinishedOf(id)
          return { key: set, add: (pipeline) => pipeline.zrem(set, id) }
        }),
      )
      return open
    },

    async readAll(messageId) {
      const entries = await redis.xrange(keys(messageId).stream, '-', '+')
      return entries.filter(([, fields]) => fields[0] === 'i').map(([, fields]) => fields[1] ?? '')
    },

    async remove(messageId) {
      const { meta, stream } = keys(messageId)
      await redis.multi().del(meta, stream).zrem(unfinishedOf(messageId), messageId).exec()
      batcher.untrack(messageId)
      mirrors.end(messageId)
      follower.drop(stream)
    },

    async close() {
      if (closed) return
      await batcher.drain()
      closed = true
      mirrors.close()
      await follower.close()
    },
  }
}
