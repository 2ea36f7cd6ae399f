// The StopChannel contract, run unchanged over every adapter: memory always,
// Redis when TEST_REDIS_URL is set, and Redis on a private Redis Cluster
// (sharded pub/sub) where redis-server is installed. Cross-instance delivery,
// malformed messages and the subscriber connection exist only over Redis;
// those tests skip memory. Listeners watch the conversations they expect
// stops for, as a runner does (on a Cluster only those reach them); a stop
// whose message is lost arrives through its durable flag.
import { afterAll, describe, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { createMemoryStopChannel } from '../../src/state/memory-stop-channel.ts'
import { createRedisStopChannel } from '../../src/state/redis-stop-channel.ts'
import type { StopChannel, StopRequest } from '../../src/state/stop-channel.ts'
import { conversationStopChannel, stopFlagKey } from '../../src/storage/keyspace.ts'
import type { RedisClient } from '../../src/storage/redis-connections.ts'
import { uniqueName } from '../support/backends.ts'
import {
  clusterConnector,
  REDIS_DEPLOYMENTS_MISSING,
  sharedCluster,
} from '../support/redis-deployments.ts'

interface StopSpace {
  channel: StopChannel
  /** Another instance on the same channel, as another process would open it. */
  peer(): Promise<StopChannel>
  /** Publishes text directly, past the adapter, where stops for the conversation go. */
  publishRaw(message: string, conversationId: string): Promise<void>
  /** Sets a conversation's stop flag directly, with no message (as if it was lost). */
  flagOnly(request: StopRequest): Promise<void>
  /** Connections subscribed to the channel; also proves the caller's client still works. */
  subscribers(): Promise<number>
}

interface StopBackend {
  name: string
  /** Whether instances share requests (peer, publishRaw and flagOnly work). */
  shared: boolean
  /** Whether subscribers() counts the instances subscribed (one channel for all). */
  counted: boolean
  /** A channel on a fresh channel name. */
  open(): Promise<StopSpace>
}

const clients: RedisClient[] = []
const channels: StopChannel[] = []

if (REDIS_DEPLOYMENTS_MISSING)
  console.log(`stop-channel-contract: Redis Cluster skipped: ${REDIS_DEPLOYMENTS_MISSING}`)
const cluster = REDIS_DEPLOYMENTS_MISSING ? undefined : await sharedCluster()

function stopBackends(): StopBackend[] {
  const unsupported = () => Promise.reject(new Error('not supported by the memory channel'))
  const backends: StopBackend[] = [
    {
      name: 'memory',
      shared: false,
      counted: false,
      open: async () => ({
        channel: createMemoryStopChannel(),
        peer: unsupported,
        publishRaw: unsupported,
        flagOnly: unsupported,
        subscribers: unsupported,
      }),
    },
  ]
  const connect = async (redis: RedisClient, keyPrefix: string) => {
    clients.push(redis)
    // Flags read every 300 ms besides when a message may have been missed.
    const channel = await createRedisStopChannel({ redis, keyPrefix, pollMs: 300 })
    channels.push(channel)
    return channel
  }
  const flagOnly = (redis: RedisClient, keyPrefix: string) => async (request: StopRequest) =>
    void (await redis.set(stopFlagKey(keyPrefix, request.conversationId), request.messageId))
  const url = process.env.TEST_REDIS_URL
  if (url)
    backends.push({
      name: 'redis',
      shared: true,
      counted: true,
      async open() {
        const keyPrefix = `${uniqueName('stop')}:`
        const redis = new Redis(url)
        return {
          channel: await connect(redis, keyPrefix),
          peer: () => connect(new Redis(url), keyPrefix),
          publishRaw: async (message) => void (await redis.publish(`${keyPrefix}stop`, message)),
          flagOnly: flagOnly(redis, keyPrefix),
          subscribers: async () => Number((await redis.pubsub('NUMSUB', `${keyPrefix}stop`))[1]),
        }
      },
    })
  if (cluster)
    backends.push({
      name: 'redis cluster',
      shared: true,
      counted: false,
      async open() {
        const keyPrefix = `${uniqueName('stop')}:`
        const connector = clusterConnector(cluster)
        const redis = connector.connect()
        return {
          channel: await connect(redis, keyPrefix),
          peer: () => connect(connector.connect(), keyPrefix),
          publishRaw: async (message, conversationId) =>
            void (await redis.spublish(
              conversationStopChannel(keyPrefix, conversationId),
              message,
            )),
          flagOnly: flagOnly(redis, keyPrefix),
          // Sharded: one subscriber per node holds the channels; counted per channel, not here.
          subscribers: unsupported,
        }
      },
    })
  return backends
}

// Stop channels use no keys: closing the channels and clients is the cleanup.
afterAll(async () => {
  await Promise.all(channels.map((channel) => channel.close()))
  await Promise.all(clients.map((client) => client.quit()))
})

/** Records what a channel delivers. */
function collect(channel: StopChannel) {
  const received: StopRequest[] = []
  const waiters: (() => void)[] = []
  channel.subscribe((request) => {
    received.push(request)
    for (const wake of waiters.splice(0)) wake()
  })
  /** Resolves once count requests arrived; fails after 2 s rather than hang. */
  async function until(count: number) {
    const deadline = Date.now() + 2_000
    while (received.length < count) {
      if (Date.now() > deadline) throw new Error(`${received.length} of ${count} requests in 2 s`)
      // Woken by a delivery, or after 50 ms to look at the clock again.
      await new Promise<void>((resolve) => {
        waiters.push(resolve)
        setTimeout(resolve, 50)
      })
    }
    return received
  }
  return { received, until }
}

const request = (label = 'conv'): StopRequest => ({
  conversationId: uniqueName(label),
  messageId: uniqueName('msg'),
})

/**
 * Requests in one order whatever order they came in: stops of two
 * conversations may overtake each other (on a Cluster they go by different shards).
 */
const inOrder = (requests: StopRequest[]) =>
  [...requests].sort((a, b) => a.conversationId.localeCompare(b.conversationId))

/** The request, with its conversation watched on each channel (as the runner running it does). */
function watched(sent: StopRequest, ...on: StopChannel[]): StopRequest {
  for (const channel of on) channel.watch(sent.conversationId)
  return sent
}

for (const backend of stopBackends()) {
  describe(`StopChannel contract: ${backend.name}`, () => {
    test("a publish reaches the publisher's own listeners, with the two ids only", async () => {
      const { channel } = await backend.open()
      const inbox = collect(channel)
      const sent = watched(request(), channel)
      await channel.publish({ ...sent, extra: 'dropped' } as StopRequest)
      expect(await inbox.until(1)).toEqual([sent])
    })

    test('every listener gets each request once, even if another throws', async () => {
      const { channel } = await backend.open()
      channel.subscribe(() => {
        throw new Error('listener failure (expected by this test)')
      })
      const inboxes = [collect(channel), collect(channel), collect(channel)]
      const first = watched(request(), channel)
      const second = watched(request(), channel)
      await channel.publish(first)
      await channel.publish(second)
      for (const inbox of inboxes)
        expect(inOrder(await inbox.until(2))).toEqual(inOrder([first, second]))
    })

    test.skipIf(!backend.shared)('a publish reaches every instance, both ways', async () => {
      const space = await backend.open()
      // No wait: the factory resolves only once the subscription is confirmed.
      const peer = await space.peer()
      const own = collect(space.channel)
      const other = collect(peer)
      const first = watched(request(), space.channel, peer)
      await space.channel.publish(first)
      const second = watched(request(), space.channel, peer)
      await peer.publish(second)
      expect(inOrder(await own.until(2))).toEqual(inOrder([first, second]))
      expect(inOrder(await other.until(2))).toEqual(inOrder([first, second]))
    })

    test.skipIf(!backend.shared)(
      'a stop whose message was lost arrives by its flag; each is heard once while watched',
      async () => {
        const space = await backend.open()
        const inbox = collect(space.channel)
        const lost = watched(request(), space.channel)
        await space.flagOnly(lost)
        expect(await inbox.until(1)).toEqual([lost])
        const sent = watched(request(), space.channel)
        await space.channel.publish(sent)
        expect(await inbox.until(2)).toEqual([lost, sent])
        // The flags are read every 300 ms: neither is heard again.
        await Bun.sleep(1_000)
        expect(inbox.received).toEqual([lost, sent])
      },
    )

    test.skipIf(!backend.counted)('one subscriber connection per instance', async () => {
      const space = await backend.open()
      collect(space.channel)
      collect(space.channel)
      expect(await space.subscribers()).toBe(1)
      const peer = await space.peer()
      collect(peer)
      expect(await space.subscribers()).toBe(2)
      await peer.close()
      expect(await space.subscribers()).toBe(1)
    })

    test.skipIf(!backend.shared)('malformed messages are ignored; later ones arrive', async () => {
      const space = await backend.open()
      const inbox = collect(space.channel)
      const valid = watched(request(), space.channel)
      for (const junk of [
        'not json',
        'null',
        '[]',
        '42',
        '{"conversationId":"c"}',
        '{"conversationId":1,"messageId":"m"}',
      ])
        await space.publishRaw(junk, valid.conversationId)
      await space.channel.publish(valid)
      // Same publisher connection, so the junk was delivered (and dropped) first.
      expect(await inbox.until(1)).toEqual([valid])
    })

    test('after close nothing arrives, and publish is refused', async () => {
      const space = await backend.open()
      const closing = collect(space.channel)
      // Sent but not yet delivered when close() runs: dropped.
      const inFlight = space.channel.publish(watched(request(), space.channel))
      await space.channel.close()
      await space.channel.close() // idempotent
      await inFlight
      await expect(space.channel.publish(request())).rejects.toThrow()
      space.channel.subscribe((late) => closing.received.push(late))
      if (backend.shared) {
        // A live instance receiving the request shows it was delivered everywhere.
        const peer = await space.peer()
        const sentinel = collect(peer)
        const sent = watched(request(), peer, space.channel)
        await peer.publish(sent)
        expect(await sentinel.until(1)).toEqual([sent])
        // One left, and asking shows the caller's client survived close().
        if (backend.counted) expect(await space.subscribers()).toBe(1)
      }
      expect(closing.received).toEqual([])
    })
  })
}
