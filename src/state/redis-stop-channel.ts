// StopChannel adapter over Redis pub/sub, so a stop asked of any instance
// reaches the one running the turn. One channel (`<prefix>stop`) carries JSON
// `{conversationId, messageId}`; publishing uses the caller's client, and each
// channel instance holds one subscriber connection (a duplicate of it), however
// many listeners it has. Messages that are not a well-formed request are
// dropped: another version, or anyone with access, may publish on the channel.
import { duplicateClient, type RedisClient } from '../storage/redis-connections.ts'
import { stopChannel } from './keyspace.ts'
import {
  deliver,
  type ListenerErrorReport,
  type StopChannel,
  type StopRequest,
} from './stop-channel.ts'

export interface RedisStopChannelOptions {
  /** A connected client; it publishes, stays the caller's and is never closed here. */
  redis: RedisClient
  /** Prepended to the channel name; tests use a random one. */
  keyPrefix?: string
  /** Told when a listener throws. */
  report?: ListenerErrorReport
}

/**
 * A stop channel over Redis pub/sub. Resolves once the subscription is
 * confirmed, so a request published right after this (from anywhere) arrives.
 */
export async function createRedisStopChannel(
  options: RedisStopChannelOptions,
): Promise<StopChannel> {
  const { redis } = options
  const channel = stopChannel(options.keyPrefix ?? '')
  const listeners = new Set<(request: StopRequest) => void>()
  let closed = false

  const subscriber = duplicateClient(redis)
  // ioredis reconnects and resubscribes by itself; without a listener it logs each error.
  subscriber.on('error', () => {})
  subscriber.on('message', (from: string, message: string) => {
    if (closed || from !== channel) return
    const request = parseStopRequest(message)
    if (request === undefined) return
    for (const listener of [...listeners]) {
      if (closed) return
      deliver(listener, request, options.report)
    }
  })
  try {
    await subscriber.subscribe(channel)
  } catch (error) {
    subscriber.disconnect()
    throw error
  }

  return {
    async publish(request) {
      if (closed) throw new Error('stop channel is closed')
      const { conversationId, messageId } = request
      await redis.publish(channel, JSON.stringify({ conversationId, messageId }))
    },
    subscribe(listener) {
      if (!closed) listeners.add(listener)
    },
    async close() {
      if (closed) return
      closed = true
      listeners.clear()
      try {
        await subscriber.unsubscribe(channel)
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
