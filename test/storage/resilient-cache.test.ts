// The resilient cache decorator: a cache that hangs or fails costs one
// timeout, then nothing while the breaker is open (reads miss, writes do
// nothing, nothing reaches the cache); once the cache answers again it is
// emptied before use, so no copy from before or during the outage survives -
// also when a server restarts from an old snapshot without any command
// failing. First over an in-process cache with a fault switch (always), then
// over real Redis behind a fault proxy (TEST_REDIS_URL) and a private
// redis-server that is killed, frozen and restored (where one is installed).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Cache } from '../../src/storage/cache.ts'
import { cacheRedisKey } from '../../src/storage/keyspace.ts'
import { createMemoryCache } from '../../src/storage/memory-cache.ts'
import { createRedisCache } from '../../src/storage/redis-cache.ts'
import { createResilientCache, type ResilientCache } from '../../src/storage/resilient-cache.ts'
import { TEST_REDIS_URL, uniqueName } from '../support/backends.ts'
import { type FaultProxy, startFaultProxy, targetOf, throughProxy } from '../support/fault-proxy.ts'
import { type PrivateRedis, privateRedis, REDIS_SERVER } from '../support/redis-server.ts'
import { sleep } from '../support/server-process.ts'

const TIMEOUT_MS = 150
const PROBE_MS = 50
/** Generous bound for a call that must not wait on the cache at all. */
const IMMEDIATE_MS = 100

async function timed<T>(run: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now()
  const value = await run()
  return { value, ms: performance.now() - started }
}

/** Resolves once check() holds, polling; throws after withinMs. */
async function eventually(check: () => boolean | Promise<boolean>, withinMs: number) {
  const deadline = Date.now() + withinMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms`)
    await sleep(10)
  }
}

type Fault = 'none' | 'hang' | 'fail'

/** An in-process cache whose commands can be made to hang or fail, counting calls. */
function switchableCache() {
  const inner = createMemoryCache()
  const state = { fault: 'none' as Fault, calls: 0, lost: [] as (() => void)[] }
  const gate =
    <A extends unknown[], R>(run: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      state.calls++
      if (state.fault === 'hang') return new Promise<R>(() => {})
      if (state.fault === 'fail') return Promise.reject(new Error('Connection is closed.'))
      return run(...args)
    }
  const cache: Cache = {
    kind: 'redis',
    get: gate(inner.get),
    set: gate(inner.set),
    del: gate(inner.del),
    startFill: gate(inner.startFill),
    fill: gate(inner.fill),
    incr: gate(inner.incr),
    ttl: gate(inner.ttl),
    listPush: gate(inner.listPush),
    listPushIfPresent: gate(inner.listPushIfPresent),
    listReplace: gate(inner.listReplace),
    listAll: gate(inner.listAll),
    flush: gate(inner.flush),
    ping: gate(inner.ping),
    onConnectionLost: (listener) => state.lost.push(listener),
    close: inner.close,
  }
  return { cache, inner, state }
}

describe('over a cache with a fault switch', () => {
  let s: ReturnType<typeof switchableCache>
  let cache: ResilientCache
  const changes: string[] = []

  const fresh = () => {
    s = switchableCache()
    changes.length = 0
    cache = createResilientCache(s.cache, {
      timeoutMs: TIMEOUT_MS,
      probeIntervalMs: PROBE_MS,
      onStateChange: (state) => changes.push(state),
    })
  }

  test('a healthy cache is used as it is', async () => {
    fresh()
    await cache.set('k', 'v', 60)
    expect(await cache.get('k')).toBe('v')
    expect(await s.inner.get('k')).toBe('v')
    expect(cache.available).toBe(true)
    await cache.close()
  })

  test('a hanging cache costs one timeout, then nothing while the breaker is open', async () => {
    fresh()
    await cache.set('k', 'before', 60)
    s.state.fault = 'hang'
    const first = await timed(() => cache.get('k'))
    expect(first.value).toBeNull()
    expect(first.ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 5)
    expect(first.ms).toBeLessThan(TIMEOUT_MS + 1_000)
    expect(cache.available).toBe(false)
    expect(changes).toEqual(['open'])

    const callsWhenOpened = s.state.calls
    const rest = await timed(async () => {
      expect(await cache.get('k')).toBeNull()
      expect(await cache.listAll('l')).toEqual([])
      expect(await cache.ttl('k')).toBe(-2)
      expect(await cache.del('k')).toBe(0)
      await cache.set('k', 'during', 60)
      await cache.listPush('l', ['x'], 5, 60)
      await cache.listReplace('l', ['y'], 60)
      await cache.flush()
    })
    expect(rest.ms).toBeLessThan(IMMEDIATE_MS)
    // Only the background probe (at most one ping per interval) reached the cache.
    expect(s.state.calls - callsWhenOpened).toBeLessThanOrEqual(Math.ceil(rest.ms / PROBE_MS) + 1)
    await expect(cache.ping()).rejects.toThrow(/unavailable/)
    await expect(cache.incr('n')).rejects.toThrow(/unavailable/)
    await cache.close()
  })

  test('when the cache answers again it is emptied first, then used', async () => {
    fresh()
    await cache.set('stale', 'old copy', 600)
    s.state.fault = 'fail'
    expect(await cache.get('stale')).toBeNull()
    expect(cache.available).toBe(false)
    s.state.fault = 'none'
    await eventually(() => cache.available, 1_000)
    expect(changes).toEqual(['open', 'closed'])
    // The copy from before the outage is gone: an invalidation may have been missed.
    expect(await s.inner.get('stale')).toBeNull()
    await cache.set('k', 'after', 60)
    expect(await cache.get('k')).toBe('after')
    await cache.close()
  })

  test('a lost connection alone (no failed command) empties the cache before reuse', async () => {
    fresh()
    await cache.set('k', 'maybe restored from an old snapshot', 600)
    for (const listener of s.state.lost) listener()
    expect(cache.available).toBe(false)
    expect(await cache.get('k')).toBeNull()
    await eventually(() => cache.available, 1_000)
    expect(await s.inner.get('k')).toBeNull()
    await cache.close()
  })

  test('a cache that still hangs when probed keeps the breaker open', async () => {
    fresh()
    s.state.fault = 'fail'
    await cache.get('x')
    s.state.fault = 'hang'
    await sleep(PROBE_MS * 3)
    expect(cache.available).toBe(false)
    s.state.fault = 'none'
    await eventually(() => cache.available, 2_000)
    await cache.close()
  })

  test('a refused command (WRONGTYPE) is the caller’s error and opens nothing', async () => {
    fresh()
    await cache.listPush('list', ['a'], 5, 60)
    await expect(cache.get('list')).rejects.toThrow(/WRONGTYPE/)
    expect(cache.available).toBe(true)
    await cache.close()
  })

  test('close stops the probe', async () => {
    fresh()
    s.state.fault = 'fail'
    await cache.get('x')
    await cache.close()
    const calls = s.state.calls
    await sleep(PROBE_MS * 4)
    expect(s.state.calls).toBe(calls)
  })
})

if (TEST_REDIS_URL) {
  const redisUrl = TEST_REDIS_URL
  describe('over real Redis behind a fault proxy', () => {
    let proxy: FaultProxy
    let cache: ResilientCache
    let direct: Cache
    const prefix = `${uniqueName('resilient')}:`

    beforeAll(async () => {
      proxy = await startFaultProxy(targetOf(redisUrl))
      cache = createResilientCache(
        createRedisCache(throughProxy(redisUrl, proxy), { keyPrefix: prefix }),
        { timeoutMs: TIMEOUT_MS, probeIntervalMs: PROBE_MS },
      )
      direct = createRedisCache(redisUrl, { keyPrefix: prefix })
    })
    afterAll(async () => {
      await cache.close()
      await direct.flush()
      await direct.close()
      await proxy.close()
    })

    for (const fault of ['freeze', 'drop'] as const)
      test(`${fault}: one timeout at most, then immediate misses; back within a second, emptied`, async () => {
        proxy.pass()
        await eventually(() => cache.available, 2_000)
        await cache.set('history', 'copy from before', 600)
        expect(await direct.get('history')).toBe('copy from before')

        proxy[fault]()
        const first = await timed(() => cache.get('history'))
        expect(first.value).toBeNull()
        expect(first.ms).toBeLessThan(TIMEOUT_MS + 1_000)
        const next = await timed(async () => {
          for (let i = 0; i < 20; i++) expect(await cache.get('history')).toBeNull()
        })
        expect(next.ms).toBeLessThan(IMMEDIATE_MS)
        // An invalidation during the outage is not delivered...
        await cache.del('history')
        expect(await direct.get('history')).toBe('copy from before')

        proxy.pass()
        const back = Date.now()
        await eventually(() => cache.available, 1_500)
        expect(Date.now() - back).toBeLessThan(1_500)
        // ...and yet the old copy is gone: the cache was emptied before reuse.
        expect(await direct.get('history')).toBeNull()
        expect(await cache.get('history')).toBeNull()
        await cache.set('history', 'fresh', 600)
        expect(await direct.get('history')).toBe('fresh')
      })
  })
}

if (REDIS_SERVER) {
  describe('over a private redis-server that is killed, frozen and restored', () => {
    let server: PrivateRedis
    let cache: ResilientCache

    beforeAll(async () => {
      server = privateRedis()
      await server.start()
      cache = createResilientCache(createRedisCache(server.url), {
        timeoutMs: TIMEOUT_MS,
        probeIntervalMs: PROBE_MS,
      })
    })
    afterAll(async () => {
      await cache.close()
      await server.stop()
    })

    test('a restart from an old snapshot, with no command failing, serves no old copy', async () => {
      await cache.set('history', '2 messages', 600)
      await server.save()
      // Invalidated and refilled while Redis is up: every command delivered.
      await cache.del('history')
      await cache.set('history', '4 messages', 600)
      await server.kill()
      await server.start()
      expect(await server.admin.get(cacheRedisKey('', 'history'))).toBe('2 messages')
      const back = Date.now()
      await eventually(async () => cache.available && (await cache.ping().then(() => true)), 2_000)
      expect(Date.now() - back).toBeLessThan(1_500)
      expect(await cache.get('history')).toBeNull()
      expect(await server.admin.get(cacheRedisKey('', 'history'))).toBeNull()
    })

    test('SIGSTOP: one timeout, then immediate; SIGCONT: back within a second', async () => {
      await eventually(() => cache.available, 2_000)
      await cache.set('k', 'v', 600)
      server.freeze()
      try {
        const first = await timed(() => cache.get('k'))
        expect(first.value).toBeNull()
        expect(first.ms).toBeLessThan(TIMEOUT_MS + 1_000)
        const next = await timed(() => cache.get('k'))
        expect(next.ms).toBeLessThan(IMMEDIATE_MS)
      } finally {
        server.thaw()
      }
      const back = Date.now()
      await eventually(() => cache.available, 1_500)
      expect(Date.now() - back).toBeLessThan(1_500)
      expect(await server.admin.get(cacheRedisKey('', 'k'))).toBeNull()
    })
  })
}
