// The near cache as the service wires it (dependencies.ts: near tier, over the
// resilient cache, over Redis, with a CLIENT TRACKING feed) while its Redis is
// frozen (SIGSTOP, or a fault proxy that holds every byte) or cut (proxy
// drop): a write of a near key - a send's invalidation - waits at most about
// two cache deadlines (the command's, then the feed's PING), never for the
// whole freeze; an instance that only serves near hits stops serving its
// copies within a heartbeat and a deadline, since invalidations can no longer
// reach it; and once Redis answers, tracking is set up again and changes
// reach every instance as before.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Cache } from '../../src/storage/cache.ts'
import {
  createNearCache,
  type InvalidationFeed,
  type InvalidationListener,
} from '../../src/storage/near-cache.ts'
import { createRedisCache } from '../../src/storage/redis-cache.ts'
import { openRedisInvalidations } from '../../src/storage/redis-invalidations.ts'
import { createResilientCache } from '../../src/storage/resilient-cache.ts'
import { uniqueName } from '../support/backends.ts'
import { type FaultProxy, startFaultProxy, targetOf, throughProxy } from '../support/fault-proxy.ts'
import { type PrivateRedis, REDIS_SERVER, startPrivateRedis } from '../support/redis-server.ts'

const TIMEOUT_MS = 300
const HEARTBEAT_MS = 300
/** A command's deadline, then the feed's: the most a write of a near key may wait, with room. */
const WRITE_BOUND_MS = 2 * TIMEOUT_MS + 700
/** An idle instance notices within a heartbeat and a deadline, with room. */
const NOTICE_BOUND_MS = HEARTBEAT_MS + TIMEOUT_MS + 1_000

type FeedEvent = 'connected' | 'disconnected'

/** A feed whose connected/disconnected reports a test can wait for. */
function observed(feed: InvalidationFeed) {
  const waiters: { event: FeedEvent; resolve: () => void }[] = []
  const report = (event: FeedEvent) => {
    for (const waiter of waiters.splice(0))
      if (waiter.event === event) waiter.resolve()
      else waiters.push(waiter)
  }
  const wrapped: InvalidationFeed = {
    ...feed,
    listen: (listener: InvalidationListener) =>
      feed.listen({
        ...listener,
        connected() {
          listener.connected()
          report('connected')
        },
        disconnected() {
          listener.disconnected()
          report('disconnected')
        },
      }),
  }
  const next = (event: FeedEvent) =>
    new Promise<void>((resolve) => waiters.push({ event, resolve }))
  return { feed: wrapped, next }
}

async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now()
  const value = await run()
  return { value, ms: performance.now() - started }
}

/** Waits for promise, failing after ms (so a hang is reported as one). */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms),
    ),
  ])
}

/** The fault switch of a test: a private server's SIGSTOP, or a proxy in front of Redis. */
interface Fault {
  url: string
  freeze(): void
  thaw(): void
  /** Writes to Redis around any fault. */
  direct: Cache
  close(): Promise<void>
}

function suite(name: string, open: () => Promise<Fault>) {
  describe(name, () => {
    let fault: Fault
    const opened: Cache[] = []

    /** An instance's cache as dependencies.ts builds it, every `k:` key near. */
    async function instance() {
      const { feed, next } = observed(
        openRedisInvalidations(fault.url, {
          prefixes: ['k:'],
          timeoutMs: TIMEOUT_MS,
          heartbeatMs: HEARTBEAT_MS,
        }),
      )
      const connected = next('connected')
      const shared = createResilientCache(createRedisCache(fault.url), {
        timeoutMs: TIMEOUT_MS,
        probeIntervalMs: 50,
      })
      const cache = createNearCache(shared, feed, {
        maxBytes: 2 ** 20,
        isNear: (key) => key.startsWith('k:'),
      })
      opened.push(cache)
      await connected
      return { cache, shared, next }
    }

    beforeAll(async () => {
      fault = await open()
    }, 30_000)
    afterAll(async () => {
      fault.thaw()
      for (const cache of opened) await cache.close()
      await fault.close()
    })

    test('frozen: a write waits two deadlines at most, an idle instance stops serving its copy, and all is coherent once thawed', async () => {
      const a = await instance()
      const b = await instance()
      const k = `k:${uniqueName('key')}`
      await fault.direct.set(k, 'before', 600)
      expect(await a.cache.get(k)).toBe('before')
      expect(await b.cache.get(k)).toBe('before')

      const bDown = b.next('disconnected')
      const aBack = a.next('connected')
      const bBack = b.next('connected')
      fault.freeze()
      try {
        // A send's invalidation: the command's deadline, then the feed's, never the freeze.
        const write = await timed(() => within(a.cache.del(k), 10_000, 'the write'))
        expect(write.ms).toBeLessThan(WRITE_BOUND_MS)
        // Later writes wait for nothing: the cache's breaker is open, the feed is down.
        const next = await timed(() => a.cache.set(k, 'during', 600))
        expect(next.ms).toBeLessThan(100)
        // b made no write, yet it notices the freeze and stops serving its copy.
        await within(bDown, NOTICE_BOUND_MS, 'b noticing the freeze')
        const read = await timed(() => b.cache.get(k))
        expect(read.value).toBeNull()
        expect(read.ms).toBeLessThan(TIMEOUT_MS + 500)
      } finally {
        fault.thaw()
      }
      await within(Promise.all([aBack, bBack]), 5_000, 'tracking again')
      // Each cache's breaker closes once its probe has emptied the cache.
      await within(
        (async () => {
          while (!a.shared.available || !b.shared.available) await Bun.sleep(10)
        })(),
        5_000,
        'the caches used again',
      )
      // Coherent again: a change by anyone reaches both.
      await a.cache.set(k, 'after', 600)
      expect(await b.cache.get(k)).toBe('after')
      await fault.direct.set(k, 'changed elsewhere', 600)
      await within(
        (async () => {
          while ((await b.cache.get(k)) !== 'changed elsewhere') await Bun.sleep(10)
        })(),
        2_000,
        'b seeing a change after the thaw',
      )
    }, 30_000)
  })
}

if (REDIS_SERVER) {
  let server: PrivateRedis
  suite('near cache over a private redis-server, SIGSTOP', async () => {
    server = await startPrivateRedis()
    const direct = createRedisCache(server.url)
    return {
      url: server.url,
      freeze: () => server.freeze(),
      thaw: () => server.thaw(),
      direct,
      async close() {
        await direct.close()
        await server.stop()
      },
    }
  })
}

if (REDIS_SERVER) {
  // Behind a proxy that holds every byte: as a network that blackholes packets.
  // A private server, since the near cache's tracking and its flush see the whole database.
  let server: PrivateRedis
  let proxy: FaultProxy
  suite('near cache behind a fault proxy that freezes', async () => {
    server = await startPrivateRedis()
    proxy = await startFaultProxy(targetOf(server.url))
    const direct = createRedisCache(server.url)
    return {
      url: throughProxy(server.url, proxy),
      freeze: () => proxy.freeze(),
      thaw: () => proxy.pass(),
      direct,
      async close() {
        await direct.close()
        await proxy.close()
        await server.stop()
      },
    }
  })
}

if (!REDIS_SERVER) console.log('near-cache-outage.test.ts skipped: redis-server is not installed')
