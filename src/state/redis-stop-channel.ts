// StopChannel adapter over Redis, so a stop asked of any instance reaches the
// one running the turn, by two ways at once:
// - a message. On one server or Sentinel: one channel (`<prefix>stop`) that
//   each channel instance subscribes to once, on a connection of its own. On a
//   Cluster with sharded pub/sub (Redis 7): the conversation's own channel
//   (`<prefix>stop:{<conversation>}`, in its slot), subscribed to while the
//   conversation is watched, so a stop goes to one shard rather than to every
//   node (plain pub/sub on a Cluster broadcasts, and is used before Redis 7).
// - a durable flag (`<prefix>stop:{<conversation>}` = the message id, kept a
//   minute), read for the watched conversations whenever a message may have
//   been missed (the subscriber connected again; a conversation's sharded
//   subscription was just confirmed) and every pollMs besides: a message lost
//   to a reconnect or a failover still stops the turn, a moment later.
// Messages that are not a well-formed request are dropped: another version,
// or anyone with access, may publish on the channel.

import { conversationStopChannel, stopChannel, stopFlagKey } from '../storage/keyspace.ts'
import { duplicateClient, isCluster, type RedisClient } from '../storage/redis-connections.ts'
import { pipelined } from '../storage/redis-slots.ts'
import {
  deliver,
  type ListenerErrorReport,
  type StopChannel,
  type StopRequest,
} from './stop-channel.ts'

export interface RedisStopChannelOptions {
  /** A connected client; it publishes, stays the caller's and is never closed here. */
  redis: RedisClient
  /** The state's role prefix (storage/keyspace.ts); tests use a random one. */
  keyPrefix?: string
  /** Told when a listener throws. */
  report?: ListenerErrorReport
  /** How often the watched conversations' stop flags are read besides; default 2 s. */
  pollMs?: number
}

/** How long a stop flag is kept: its turn's runner reads it within pollMs, or has lost its lease. */
const FLAG_KEPT_MS = 60_000

/** Whether the client's servers speak sharded pub/sub (SPUBLISH, Redis 7). */
async function speaksShardedPubSub(redis: RedisClient): Promise<boolean> {
  const info = await redis.info('server')
  const major = Number(/^redis_version:(\d+)/m.exec(info)?.[1] ?? 0)
  return major >= 7
}

/**
 * A stop channel over Redis. Resolves once the subscription is confirmed
 * (on a Cluster with sharded pub/sub, once the subscriber is up), so a
 * request published right after this (from anywhere) arrives.
 */
export async function createRedisStopChannel(
  options: RedisStopChannelOptions,
): Promise<StopChannel> {
  const { redis } = options
  const prefix = options.keyPrefix ?? ''
  const channel = stopChannel(prefix)
  const sharded = isCluster(redis) && (await speaksShardedPubSub(redis))
  const listeners = new Set<(request: StopRequest) => void>()
  /** Watched conversations: how many watch each, and the flag last heard of. */
  const watched = new Map<string, { count: number; heard: string | undefined }>()
  let closed = false
  let polling = false

  /** Delivers a request; one for a watched conversation only once, by message or by flag. */
  const hear = (request: StopRequest) => {
    const watch = watched.get(request.conversationId)
    if (watch) {
      if (watch.heard === request.messageId) return
      watch.heard = request.messageId
    }
    for (const listener of [...listeners]) {
      if (closed) return
      deliver(listener, request, options.report)
    }
  }

  const subscriber = duplicateClient(redis, sharded ? { shardedSubscribers: true } : {})
  // ioredis reconnects and resubscribes by itself; without a listener it logs each error.
  subscriber.on('error', () => {})
  subscriber.on(sharded ? 'smessage' : 'message', (from: string, message: string) => {
    if (closed) return
    const request = parseStopRequest(message)
    if (request === undefined) return
    const expected = sharded ? conversationStopChannel(prefix, request.conversationId) : channel
    if (from === expected) hear(request)
  })
  try {
    if (!sharded) await subscriber.subscribe(channel)
    else if (subscriber.status !== 'ready')
      await new Promise<void>((resolve, reject) => {
        subscriber.once('ready', resolve)
        subscriber.once('end', () => reject(new Error('the stop subscriber closed')))
      })
  } catch (error) {
    subscriber.disconnect()
    throw error
  }

  /** Reads the flags of the watched conversations (or of some); a new one is heard as a request. */
  async function readFlags(only?: string): Promise<void> {
    if (closed || watched.size === 0 || (polling && only === undefined)) return
    if (only === undefined) polling = true
    try {
      const ids = only === undefined ? [...watched.keys()] : [only]
      const replies = await pipelined(
        redis,
        ids.map((id) => {
          const key = stopFlagKey(prefix, id)
          return { key, add: (pipeline) => pipeline.get(key) }
        }),
      )
      replies.forEach(([error, messageId], index) => {
        const conversationId = ids[index] ?? ''
        const watch = watched.get(conversationId)
        if (error || !watch || typeof messageId !== 'string') return
        hear({ conversationId, messageId })
      })
    } finally {
      if (only === undefined) polling = false
    }
  }
  const poller = setInterval(() => void readFlags().catch(() => {}), options.pollMs ?? 2_000)
  poller.unref?.()
  // Connected again: messages sent meanwhile are lost, their flags are not.
  subscriber.on('ready', () => void readFlags().catch(() => {}))

  return {
    async publish(request) {
      if (closed) throw new Error('stop channel is closed')
      const { conversationId, messageId } = request
      const message = JSON.stringify({ conversationId, messageId })
      await Promise.all([
        redis.set(stopFlagKey(prefix, conversationId), messageId, 'PX', FLAG_KEPT_MS),
        sharded
          ? redis.spublish(conversationStopChannel(prefix, conversationId), message)
          : redis.publish(channel, message),
      ])
    },
    subscribe(listener) {
      if (!closed) listeners.add(listener)
    },
    watch(conversationId) {
      let watch = watched.get(conversationId)
      if (!watch) {
        watch = { count: 0, heard: undefined }
        watched.set(conversationId, watch)
        // A stop sent before this confirms is read from the flag, once it has.
        if (sharded && !closed)
          subscriber
            .ssubscribe(conversationStopChannel(prefix, conversationId))
            .then(() => readFlags(conversationId))
            .catch(() => {})
      }
      const mine = watch
      mine.count++
      let done = false
      return () => {
        if (done) return
        done = true
        mine.count--
        if (mine.count > 0 || watched.get(conversationId) !== mine) return
        watched.delete(conversationId)
        if (sharded && !closed)
          subscriber.sunsubscribe(conversationStopChannel(prefix, conversationId)).catch(() => {})
      }
    },
    async close() {
      if (closed) return
      closed = true
      clearInterval(poller)
      listeners.clear()
      watched.clear()
      try {
        if (!sharded) await subscriber.unsubscribe(channel)
        await subscriber.quit()
      } catch {
        subscriber.disconnect()
      }
    },
  }
}

/** The request a message carries, or undefined when it is not one. */
function parseStopRequest(message: string): StopRequest | undefined {
  let value: unknown
  try {
    value = JSON.parse(message)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { conversationId, messageId } = value as Record<string, unknown>
  if (typeof conversationId !== 'string' || typeof messageId !== 'string') return undefined
  return { conversationId, messageId }
}
