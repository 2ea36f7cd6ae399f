// The StopChannel contract, run unchanged over every adapter: memory always,
// Redis when TEST_REDIS_URL is set. Cross-instance delivery, malformed messages
// and the subscriber connection exist only over Redis; those tests skip memory.
import { afterAll, describe, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { createMemoryStopChannel } from '../../src/state/memory-stop-channel.ts'
import { createRedisStopChannel } from '../../src/state/redis-stop-channel.ts'
import type { StopChannel, StopRequest } from '../../src/state/stop-channel.ts'
import { uniqueName } from '../support/backends.ts'

interface StopSpace {
  channel: StopChannel
  /** Another instance on the same channel, as another process would open it. */
  peer(): Promise<StopChannel>
  /** Publishes text on the channel directly, past the adapter. */
  publishRaw(message: string): Promise<void>
  /** Connections subscribed to the channel; also proves the caller's client still works. */
  subscribers(): Promise<number>
}

interface StopBackend {
  name: string
  /** Whether instances share requests (peer, publishRaw and subscribers work). */
  shared: boolean
  /** A channel on a fresh channel name. */
  open(): Promise<StopSpace>
}

const clients: Redis[] = []
const channels: StopChannel[] = []

function stopBackends(): StopBackend[] {
  const unsupported = () => Promise.reject(new Error('not supported by the memory channel'))
  const backends: StopBackend[] = [
    {
      name: 'memory',
      shared: false,
      open: async () => ({
        channel: createMemoryStopChannel(),
        peer: unsupported,
        publishRaw: unsupported,
        subscribers: unsupported,
      }),
    },
  ]
  const url = process.env.TEST_REDIS_URL
  if (!url) return backends
  const connect = async (redis: Redis, keyPrefix: string) => {
    clients.push(redis)
    const channel = await createRedisStopChannel({ redis, keyPrefix })
    channels.push(channel)
    return channel
  }
  backends.push({
    name: 'redis',
    shared: true,
    async open() {
      const keyPrefix = `${uniqueName('stop')}:`
      const redis = new Redis(url)
      return {
        channel: await connect(redis, keyPrefix),
        peer: () => connect(new Redis(url), keyPrefix),
        publishRaw: async (message) => void (await redis.publish(`${keyPrefix}stop`, message)),
        subscribers: async () => Number((await redis.pubsub('NUMSUB', `${keyPrefix}stop`))[1]),
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

for (const backend of stopBackends()) {
  describe(`StopChannel contract: ${backend.name}`, () => {
    test("a publish reaches the publisher's own listeners, with the two ids only", async () => {
      const { channel } = await backend.open()
      const inbox = collect(channel)
      const sent = request()
      await channel.publish({ ...sent, extra: 'dropped' } as StopRequest)
      expect(await inbox.until(1)).toEqual([sent])
    })

    test('every listener gets each request once, even if another throws', async () => {
      const { channel } = await backend.open()
      channel.subscribe(() => {
        throw new Error('listener failure (expected by this test)')
      })
      const inboxes = [collect(channel), collect(channel), collect(channel)]
      const first = request()
      const second = request()
      await channel.publish(first)
      await channel.publish(second)
      for (const inbox of inboxes) expect(await inbox.until(2)).toEqual([first, second])
    })

    test.skipIf(!backend.shared)('a publish reaches every instance, both ways', async () => {
      const space = await backend.open()
      // No wait: the factory resolves only once the subscription is confirmed.
      const peer = await space.peer()
      const own = collect(space.channel)
      const other = collect(peer)
      const first = request()
      await space.channel.publish(first)
      const second = request()
      await peer.publish(second)
      expect(await own.until(2)).toEqual([first, second])
      expect(await other.until(2)).toEqual([first, second])
    })

    test.skipIf(!backend.shared)('one subscriber connection per instance', async () => {
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
      for (const junk of [
        'not json',
        'null',
        '[]',
        '42',
        '{"conversationId":"c"}',
        '{"conversationId":1,"messageId":"m"}',
      ])
        await space.publishRaw(junk)
      const valid = request()
      await space.channel.publish(valid)
      // Same publisher connection, so the junk was delivered (and dropped) first.
      expect(await inbox.until(1)).toEqual([valid])
    })

    test('after close nothing arrives, and publish is refused', async () => {
      const space = await backend.open()
      const closing = collect(space.channel)
      // Sent but not yet delivered when close() runs: dropped.
      const inFlight = space.channel.publish(request())
      await space.channel.close()
      await space.channel.close() // idempotent
      await inFlight
      await expect(space.channel.publish(request())).rejects.toThrow()
      space.channel.subscribe((late) => closing.received.push(late))
      if (backend.shared) {
        // A live instance receiving the request shows it was delivered everywhere.
        const peer = await space.peer()
        const sentinel = collect(peer)
        const sent = request()
        await peer.publish(sent)
        expect(await sentinel.until(1)).toEqual([sent])
        // One left, and asking shows the caller's client survived close().
        expect(await space.subscribers()).toBe(1)
      }
      expect(closing.received).toEqual([])
    })
  })
}
