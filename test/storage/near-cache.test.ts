// The near cache on a private real Redis (CLIENT TRACKING needs the real
// server): hits come from process memory; a change made by anyone (another
// near cache, a plain client, an expiry, a flush) is what the next read
// serves; a lost tracking connection empties the near tier and it serves
// nothing until tracking is back; copies never outlive the key's expiry; the
// memory bound holds; a read racing a change keeps no stale copy. The Cache
// contract itself runs over the near tier in cache-contract.test.ts.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Redis from 'ioredis'
import type { Cache } from '../../src/storage/cache.ts'
import {
  createNearCache,
  type InvalidationFeed,
  type InvalidationListener,
} from '../../src/storage/near-cache.ts'
import { createRedisCache } from '../../src/storage/redis-cache.ts'
import { openRedisInvalidations } from '../../src/storage/redis-invalidations.ts'
import { uniqueName } from '../support/backends.ts'
import { type PrivateRedis, REDIS_SERVER, startPrivateRedis } from '../support/redis-server.ts'

if (!REDIS_SERVER) console.log('near-cache.test.ts skipped: redis-server is not installed')

type FeedEvent = 'connected' | 'disconnected' | 'flushed' | `changed:${string}`

/** A feed whose reports a test can wait for: next() must be called before the event. */
function observed(feed: InvalidationFeed) {
  const waiters: { match: (event: FeedEvent) => boolean; resolve: () => void }[] = []
  const report = (event: FeedEvent) => {
    for (const waiter of waiters.splice(0))
      if (waiter.match(event)) waiter.resolve()
      else waiters.push(waiter)
  }
  const wrapped: InvalidationFeed = {
    ...feed,
    listen: (listener: InvalidationListener) =>
      feed.listen({
        connected() {
          listener.connected()
          report('connected')
        },
        disconnected() {
          listener.disconnected()
          report('disconnected')
        },
        changed(keys) {
          listener.changed(keys)
          for (const key of keys) report(`changed:${key}`)
        },
        flushed() {
          listener.flushed()
          report('flushed')
        },
      }),
  }
  const next = (event: FeedEvent) =>
    new Promise<void>((resolve) => waiters.push({ match: (seen) => seen === event, resolve }))
  return { feed: wrapped, next }
}

/** cache, counting the reads that reach it. */
function counting(cache: Cache) {
  let gets = 0
  const counted: Cache = {
    ...cache,
    get(key) {
      gets++
      return cache.get(key)
    },
  }
  return { cache: counted, gets: () => gets }
}

describe.skipIf(!REDIS_SERVER)('near cache on a real Redis', () => {
  let redis: PrivateRedis
  let raw: Redis
  const opened: Cache[] = []

  /** A near cache (an "instance") over its own connections, every key near. */
  async function instance(options: { maxBytes?: number; now?: () => number } = {}) {
    const name = uniqueName('near')
    const shared = counting(createRedisCache(redis.url))
    const { feed, next } = observed(
      openRedisInvalidations(redis.url, { prefixes: ['k:'], connectionName: name }),
    )
    const connected = next('connected')
    const cache = createNearCache(shared.cache, feed, {
      maxBytes: options.maxBytes ?? 2 ** 20,
      isNear: (key) => key.startsWith('k:'),
      now: options.now,
    })
    opened.push(cache)
    await connected
    return { cache, next, gets: shared.gets, name }
  }

  // Hash-tagged, as the service's keys are: the cache stores them under the name they have.
  const key = () => `k:{${uniqueName('key')}}`

  beforeAll(async () => {
    redis = await startPrivateRedis()
    raw = new Redis(redis.url)
  }, 30_000)

  afterAll(async () => {
    for (const cache of opened) await cache.close()
    raw.disconnect()
    await redis.stop()
  })

  test('a hit is served from process memory, without a read of the shared cache', async () => {
    const a = await instance()
    const k = key()
    await raw.set(k, 'v', 'EX', 600)
    expect(await a.cache.get(k)).toBe('v')
    expect(await a.cache.get(k)).toBe('v')
    expect(await a.cache.get(k)).toBe('v')
    expect(a.gets()).toBe(1)
  })

  test('keys that are not near always go to the shared cache', async () => {
    const a = await instance()
    const k = `far:{${uniqueName('far')}}`
    await raw.set(k, 'v')
    expect(await a.cache.get(k)).toBe('v')
    expect(await a.cache.get(k)).toBe('v')
    expect(a.gets()).toBe(2)
  })

  test('a value set directly in Redis by another client is what the next read serves', async () => {
    const a = await instance()
    const k = key()
    await raw.set(k, 'old', 'EX', 600)
    expect(await a.cache.get(k)).toBe('old')
    const reported = a.next(`changed:${k}`)
    await raw.set(k, 'new', 'EX', 600)
    await reported
    expect(await a.cache.get(k)).toBe('new')
    const deleted = a.next(`changed:${k}`)
    await raw.del(k)
    await deleted
    expect(await a.cache.get(k)).toBeNull()
  })

  test('a write through one instance has reached the other when it resolves', async () => {
    const a = await instance()
    const b = await instance()
    const k = key()
    for (let round = 0; round < 50; round++) {
      expect(await a.cache.get(k)).toBe(round === 0 ? null : `v${round - 1}`)
      let reported = false
      void a.next(`changed:${k}`).then(() => {
        reported = true
      })
      // Resolves only after the change was reported to b's feed, and so to a's.
      await b.cache.set(k, `v${round}`, 600)
      expect(reported).toBe(true)
    }
    expect(await a.cache.get(k)).toBe('v49')
    const deleted = a.next(`changed:${k}`)
    await b.cache.del(k)
    await deleted
    expect(await a.cache.get(k)).toBeNull()
  })

  test('writes resolving together share one PING, and each has reached the other instance', async () => {
    const a = await instance()
    const b = await instance()
    const keys = Array.from({ length: 20 }, key)
    for (const k of keys) {
      await raw.set(k, 'old', 'EX', 600)
      expect(await a.cache.get(k)).toBe('old')
    }
    const reported = new Set<string>()
    for (const k of keys) void a.next(`changed:${k}`).then(() => reported.add(k))
    const pings = async () =>
      Number(/cmdstat_ping:calls=(\d+)/.exec(await raw.info('commandstats'))?.[1] ?? 0)
    const before = await pings()
    await Promise.all(
      keys.map(async (k) => {
        await b.cache.set(k, 'new', 600)
        expect(reported.has(k)).toBe(true)
      }),
    )
    // One PING each would be 20; the twenty replies reach b together.
    expect((await pings()) - before).toBeLessThanOrEqual(2)
    for (const k of keys) expect(await a.cache.get(k)).toBe('new')
  })

  test('the writing instance itself never serves its old copy after the write', async () => {
    const a = await instance()
    const k = key()
    for (let round = 0; round < 50; round++) {
      await a.cache.set(k, `v${round}`, 600)
      expect(await a.cache.get(k)).toBe(`v${round}`)
    }
    await a.cache.del(k)
    expect(await a.cache.get(k)).toBeNull()
  })

  test('FLUSHDB (DELETE /cache) empties every near cache', async () => {
    const a = await instance()
    const b = await instance()
    const k = key()
    await raw.set(k, 'before', 'EX', 600)
    expect(await a.cache.get(k)).toBe('before')
    const flushed = a.next('flushed')
    await b.cache.flush()
    await flushed
    expect(await a.cache.get(k)).toBeNull()
    // Also when someone else flushes.
    await raw.set(k, 'again', 'EX', 600)
    expect(await a.cache.get(k)).toBe('again')
    const flushedAgain = a.next('flushed')
    await raw.flushdb()
    await flushedAgain
    expect(await a.cache.get(k)).toBeNull()
  })

  test('a lost tracking connection empties the near tier, which serves nothing until tracking is back', async () => {
    const a = await instance()
    const k = key()
    await raw.set(k, 'v1', 'EX', 600)
    expect(await a.cache.get(k)).toBe('v1')
    expect(await a.cache.get(k)).toBe('v1')
    expect(a.gets()).toBe(1)

    const list = String(await raw.client('LIST'))
    const line = list.split('\n').find((entry) => entry.includes(` name=${a.name} `))
    const id = line?.match(/^id=(\d+)/)?.[1]
    expect(id).toBeDefined()
    const down = a.next('disconnected')
    const back = a.next('connected')
    await raw.client('KILL', 'ID', String(id))
    // Changed while no invalidation can reach a.
    await raw.set(k, 'v2', 'EX', 600)
    await down
    expect(await a.cache.get(k)).toBe('v2')
    expect(await a.cache.get(k)).toBe('v2')
    expect(a.gets()).toBe(3)
    await back
    // Tracking again: hits from memory again, and changes reach it again.
    expect(await a.cache.get(k)).toBe('v2')
    expect(await a.cache.get(k)).toBe('v2')
    expect(a.gets()).toBe(4)
    const reported = a.next(`changed:${k}`)
    await raw.set(k, 'v3', 'EX', 600)
    await reported
    expect(await a.cache.get(k)).toBe('v3')
  }, 15_000)

  test('a copy is never served past the expiry the key had in Redis', async () => {
    let clock = Date.now()
    const a = await instance({ now: () => clock })
    const k = key()
    await raw.set(k, 'v', 'EX', 100)
    expect(await a.cache.get(k)).toBe('v')
    clock += 99_000
    expect(await a.cache.get(k)).toBe('v')
    expect(a.gets()).toBe(1)
    // Past the key's expiry the copy is dropped and Redis asked again.
    clock += 1_000
    expect(await a.cache.get(k)).toBe('v')
    expect(a.gets()).toBe(2)
    // A key without expiry stays near until it changes.
    const forever = key()
    await raw.set(forever, 'kept')
    expect(await a.cache.get(forever)).toBe('kept')
    clock += 10 ** 9
    expect(await a.cache.get(forever)).toBe('kept')
    expect(a.gets()).toBe(3)
  })

  test('keys with a real 1 s expiry are gone from the near tier after it', async () => {
    const a = await instance()
    const k = key()
    await raw.set(k, 'v', 'EX', 1)
    expect(await a.cache.get(k)).toBe('v')
    await Bun.sleep(1_100)
    expect(await a.cache.get(k)).toBeNull()
  })

  test('the memory bound holds: old copies are evicted, an oversized value is not kept', async () => {
    const a = await instance({ maxBytes: 64 * 1024 })
    const keys = Array.from({ length: 40 }, () => key())
    const value = 'x'.repeat(2_000)
    for (const k of keys) await raw.set(k, value, 'EX', 600)
    for (const k of keys) expect(await a.cache.get(k)).toBe(value)
    expect(a.gets()).toBe(40)
    // 40 copies of ~4 KB do not fit in 64 KiB: the first ones were evicted.
    expect(await a.cache.get(keys[0] as string)).toBe(value)
    expect(a.gets()).toBe(41)
    // The last ones are still near.
    expect(await a.cache.get(keys[39] as string)).toBe(value)
    expect(a.gets()).toBe(41)
    // One value past an eighth of the bound is never kept.
    const big = key()
    await raw.set(big, 'y'.repeat(5_000), 'EX', 600)
    await a.cache.get(big)
    await a.cache.get(big)
    expect(a.gets()).toBe(43)
  })

  test('a read racing a change keeps no stale copy', async () => {
    const name = uniqueName('near')
    const inner = createRedisCache(redis.url)
    let fetched: () => void = () => {}
    const hasFetched = new Promise<void>((resolve) => {
      fetched = resolve
    })
    let release: () => void = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    let gated = true
    let gets = 0
    // The first read's answer is held back, as if it were still on the wire.
    const slow: Cache = {
      ...inner,
      async get(k) {
        gets++
        const value = await inner.get(k)
        if (gated) {
          gated = false
          fetched()
          await released
        }
        return value
      },
    }
    const { feed, next } = observed(
      openRedisInvalidations(redis.url, { prefixes: ['k:'], connectionName: name }),
    )
    const connected = next('connected')
    const a = createNearCache(slow, feed, { maxBytes: 2 ** 20, isNear: () => true })
    opened.push(a)
    await connected
    const k = key()
    await raw.set(k, 'old', 'EX', 600)
    const racing = a.get(k)
    await hasFetched
    const reported = next(`changed:${k}`)
    await raw.set(k, 'new', 'EX', 600)
    await reported
    release()
    // The racing read answers what it read, but must not keep it.
    expect(await racing).toBe('old')
    expect(await a.get(k)).toBe('new')
    expect(gets).toBe(2)
  })
})
