// The RateLimiter port contract, run unchanged over every adapter (in memory
// always, Redis when TEST_REDIS_URL is set): a window allows exactly its
// points per key, refuses the next with a Retry-After inside the window, keeps
// keys and limits apart, and opens again when the window ends. The Redis
// adapter also shares its counts between instances (separate connections) and
// keeps limiting, per process, while Redis does not answer; taking points in
// blocks, it allows one instance exactly the limit in a few round trips and
// two never more than the limit in all. (Redis frozen, dropped, killed:
// test/faults/rate-limit-outage.test.ts.)
import { afterAll, describe, expect, spyOn, test } from 'bun:test'
import Redis from 'ioredis'
import { createMemoryRateLimiter } from '../../src/rate-limit/memory-rate-limiter.ts'
import type { RateLimiter, RateLimitPolicy } from '../../src/rate-limit/rate-limiter.ts'
import {
  createRedisRateLimiter,
  type RedisRateLimiterOptions,
} from '../../src/rate-limit/redis-rate-limiter.ts'
import { createStoreBreaker, type StoreBreaker } from '../../src/storage/store-breaker.ts'
import { TEST_REDIS_URL, uniqueName } from '../support/backends.ts'
import { freePort, sleep } from '../support/server-process.ts'

const clients: Redis[] = []
const breakers: StoreBreaker[] = []
afterAll(async () => {
  for (const breaker of breakers) breaker.close()
  for (const client of clients) client.disconnect()
})

/** A client as the service makes it: commands fail at once while Redis is down. */
function redisClient(url: string): Redis {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 1_000,
    retryStrategy: () => 200,
  })
  client.on('error', () => {})
  clients.push(client)
  return client
}

/** As the service wires a limit (dependencies.ts), through a breaker of the client's store. */
function redisLimiter(
  policy: RateLimitPolicy,
  redis: Redis,
  options: Partial<RedisRateLimiterOptions> = {},
): RateLimiter {
  const breaker = createStoreBreaker({ store: 'state', timeoutMs: 500, probe: () => redis.ping() })
  breakers.push(breaker)
  return createRedisRateLimiter(policy, {
    redis,
    breaker,
    whenUnavailable: 'count-locally',
    ...options,
  })
}

/** Resolves once the client is connected (commands need it without an offline queue). */
async function connected(client: Redis): Promise<Redis> {
  if (client.status !== 'ready') await new Promise((resolve) => client.once('ready', resolve))
  return client
}

interface Adapter {
  name: string
  /** A limiter; calls with the same `prefix` behave as instances sharing one store. */
  open: (policy: RateLimitPolicy, prefix: string) => Promise<RateLimiter>
}

const adapters: Adapter[] = [
  { name: 'memory', open: async (policy) => createMemoryRateLimiter(policy) },
]
const redisUrl = TEST_REDIS_URL
if (redisUrl)
  adapters.push(
    {
      name: 'redis',
      open: async (policy, prefix) =>
        redisLimiter(policy, await connected(redisClient(redisUrl)), { keyPrefix: `${prefix}:` }),
    },
    {
      name: 'redis, points reserved in blocks',
      open: async (policy, prefix) =>
        redisLimiter(policy, await connected(redisClient(redisUrl)), {
          keyPrefix: `${prefix}:`,
          reserveBlocks: true,
        }),
    },
  )

const policy = (points: number, windowSeconds = 60): RateLimitPolicy => ({
  name: 'sends',
  points,
  windowSeconds,
})

async function consumeTimes(limiter: RateLimiter, key: string, times: number) {
  const decisions = []
  for (let i = 0; i < times; i++) decisions.push(await limiter.consume(key))
  return decisions
}

for (const adapter of adapters) {
  describe(`RateLimiter contract: ${adapter.name}`, () => {
    test('allows exactly the points of a window, then refuses with a retry time inside it', async () => {
      const limiter = await adapter.open(policy(3), uniqueName('rl'))
      const decisions = await consumeTimes(limiter, 'alice', 5)
      expect(decisions.slice(0, 3).map((decision) => decision.allowed)).toEqual([true, true, true])
      expect(decisions[0]).toEqual({ allowed: true, remaining: 2 })
      expect(decisions[2]).toEqual({ allowed: true, remaining: 0 })
      for (const refused of decisions.slice(3)) {
        expect(refused.allowed).toBe(false)
        if (refused.allowed) continue
        expect(refused.retryAfterMs).toBeGreaterThan(0)
        expect(refused.retryAfterMs).toBeLessThanOrEqual(60_000)
      }
    })

    test('each key has its own count', async () => {
      const limiter = await adapter.open(policy(1), uniqueName('rl'))
      expect((await limiter.consume('alice')).allowed).toBe(true)
      expect((await limiter.consume('alice')).allowed).toBe(false)
      expect((await limiter.consume('bob')).allowed).toBe(true)
      // A key that looks like a prefix of another, or holds separators, is its own key.
      expect((await limiter.consume('alice:')).allowed).toBe(true)
      expect((await limiter.consume('ali')).allowed).toBe(true)
    })

    test('two limits on one store count apart', async () => {
      const prefix = uniqueName('rl')
      const sends = await adapter.open({ ...policy(1), name: 'sends' }, prefix)
      const requests = await adapter.open({ ...policy(1), name: 'requests' }, prefix)
      expect((await sends.consume('alice')).allowed).toBe(true)
      expect((await requests.consume('alice')).allowed).toBe(true)
      expect((await sends.consume('alice')).allowed).toBe(false)
    })

    test('a new window allows again once the retry time has passed', async () => {
      const limiter = await adapter.open(policy(1, 1), uniqueName('rl'))
      expect((await limiter.consume('alice')).allowed).toBe(true)
      const refused = await limiter.consume('alice')
      expect(refused.allowed).toBe(false)
      if (refused.allowed) return
      expect(refused.retryAfterMs).toBeLessThanOrEqual(1_000)
      // The window's end is the event waited for.
      await sleep(refused.retryAfterMs + 50)
      expect((await limiter.consume('alice')).allowed).toBe(true)
    })
  })
}

describe.skipIf(!redisUrl)('Redis rate limiter across instances', () => {
  for (const adapter of adapters.slice(1))
    test(`instances on one Redis share the count of a user (${adapter.name})`, async () => {
      const prefix = uniqueName('rl')
      const first = await adapter.open(policy(2), prefix)
      const second = await adapter.open(policy(2), prefix)
      expect((await first.consume('alice')).allowed).toBe(true)
      expect((await second.consume('alice')).allowed).toBe(true)
      expect((await first.consume('alice')).allowed).toBe(false)
      expect((await second.consume('alice')).allowed).toBe(false)
    })

  test('points reserved in blocks: one instance gets exactly the limit in a few round trips; two never more than it', async () => {
    const redis = await connected(redisClient(redisUrl as string))
    const prefix = uniqueName('rl')
    const reserving = (name: string) =>
      redisLimiter(policy(600), redis, { keyPrefix: `${prefix}:${name}:`, reserveBlocks: true })
    const commands = spyOn(redis, 'sendCommand')
    const alone = reserving('alone')
    // 100 at once, then one at a time: exactly 600 allowed, then refusals.
    const burst = await Promise.all(Array.from({ length: 100 }, () => alone.consume('alice')))
    const rest = await consumeTimes(alone, 'alice', 520)
    const allowed = [...burst, ...rest].filter((decision) => decision.allowed).length
    expect(allowed).toBe(600)
    expect(rest.at(-1)?.allowed).toBe(false)
    // Every request would be a command to Redis; blocks make it a few dozen.
    expect(commands.mock.calls.length).toBeGreaterThan(0)
    expect(commands.mock.calls.length).toBeLessThan(40)
    commands.mockRestore()

    const one = reserving('shared')
    const other = redisLimiter(policy(600), await connected(redisClient(redisUrl as string)), {
      keyPrefix: `${prefix}:shared:`,
      reserveBlocks: true,
    })
    let both = 0
    for (let i = 0; i < 700; i++) {
      if ((await one.consume('bob')).allowed) both++
      if ((await other.consume('bob')).allowed) both++
    }
    expect(both).toBeLessThanOrEqual(600)
    // A block held unspent elsewhere costs at most half of what was left.
    expect(both).toBeGreaterThanOrEqual(300)
  })

  for (const reserveBlocks of [false, true])
    test(`while Redis does not answer, each process keeps limiting in memory, without waiting${reserveBlocks ? ' (points reserved in blocks)' : ''}`, async () => {
      // Nothing listens on this loopback port: every Redis call fails.
      const down = redisClient(`redis://127.0.0.1:${freePort()}`)
      const limiter = redisLimiter(policy(2), down, { keyPrefix: uniqueName('rl'), reserveBlocks })
      const started = performance.now()
      const decisions = await consumeTimes(limiter, 'alice', 3)
      expect(decisions.map((decision) => decision.allowed)).toEqual([true, true, false])
      expect(performance.now() - started).toBeLessThan(2_000)
    })

  test('while Redis does not answer, a limit that refuses then throws the state as unavailable, without waiting', async () => {
    const down = redisClient(`redis://127.0.0.1:${freePort()}`)
    const limiter = redisLimiter(policy(2), down, {
      keyPrefix: uniqueName('rl'),
      whenUnavailable: 'refuse',
    })
    const started = performance.now()
    for (let i = 0; i < 3; i++)
      await expect(limiter.consume('alice')).rejects.toMatchObject({
        name: 'StoreUnavailableError',
        store: 'state',
      })
    expect(performance.now() - started).toBeLessThan(2_000)
  })
})
