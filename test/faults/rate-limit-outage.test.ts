// The rate limits as dependencies.ts opens them - counted in the state Redis,
// through the state's breaker - while that Redis is frozen (SIGSTOP; a proxy
// holding every byte; a proxy slower than the deadline), killed, or cut off
// (proxy drop): no count waits longer than its deadline (the requests limit
// CACHE_TIMEOUT_MS, the sends limit the state's), and once one missed it
// nothing waits at all; the requests limit then counts in the process,
// allowing at most the limit (a bounded local allowance), and the sends limit
// refuses with the state's StoreUnavailableError (a 503); once Redis answers
// again the breaker closes and the counts are kept in Redis again.
import { afterAll, afterEach, describe, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { loadConfig } from '../../src/config.ts'
import { openRateLimits } from '../../src/dependencies.ts'
import type { RateLimits } from '../../src/rate-limit/rate-limit-plugin.ts'
import type { RateLimiter } from '../../src/rate-limit/rate-limiter.ts'
import { openRedisState, type State } from '../../src/state/state.ts'
import { rateLimitKey, rateLimitPrefix } from '../../src/storage/keyspace.ts'
import { TEST_REDIS_URL, uniqueName } from '../support/backends.ts'
import { type FaultProxy, startFaultProxy, targetOf, throughProxy } from '../support/fault-proxy.ts'
import { type PrivateRedis, REDIS_SERVER, startPrivateRedis } from '../support/redis-server.ts'
import { sleep } from '../support/server-process.ts'

/** The requests limit's deadline here (CACHE_TIMEOUT_MS), and the state's: short, so tests are quick. */
const REQUESTS_TIMEOUT_MS = 200
const STATE_TIMEOUT_MS = 500
const REQUESTS = 5
const SENDS = 3
/** Room for a loaded machine on top of a deadline. */
const ROOM_MS = 700
/** A count that must not wait for Redis at all. */
const IMMEDIATE_MS = 100

/** A way Redis fails, and how it comes back. */
interface Fault {
  name: string
  /** The state URL the service is given (the server, or a proxy in front of it). */
  url: string
  /** Straight to the server, around any fault: to see what is counted there. */
  direct: Redis
  start(): Promise<void> | void
  end(): Promise<void> | void
  close(): Promise<void>
}

async function timed<T>(run: () => Promise<T>) {
  const started = performance.now()
  const settled = await run().then(
    (value) => ({ value, error: undefined }),
    (error: unknown) => ({ value: undefined, error }),
  )
  return { ...settled, ms: performance.now() - started }
}

async function consumeTimes(limiter: RateLimiter, key: string, times: number) {
  let allowed = 0
  for (let i = 0; i < times; i++) if ((await limiter.consume(key)).allowed) allowed++
  return allowed
}

function suite(open: () => Promise<Fault>) {
  let fault: Fault | undefined
  let state: State | undefined
  const closers: (() => Promise<void> | void)[] = []
  afterEach(async () => {
    for (const close of closers.splice(0)) await close()
    await state?.close()
    await fault?.close()
    state = undefined
    fault = undefined
  })

  /** The limits and the state, opened as dependencies.ts opens them, on fault.url. */
  async function service(current: Fault) {
    const keyPrefix = `${uniqueName('limits')}:`
    state = await openRedisState(current.url, {
      retentionMs: 600_000,
      keyPrefix,
      commandTimeoutMs: STATE_TIMEOUT_MS,
    })
    const config = loadConfig({
      REDIS_STATE_URL: current.url,
      RATE_LIMIT_REQUESTS: String(REQUESTS),
      RATE_LIMIT_SENDS: String(SENDS),
      CACHE_TIMEOUT_MS: String(REQUESTS_TIMEOUT_MS),
    })
    const limits = await openRateLimits(config, (close) => closers.push(close), {
      breaker: state.breaker,
      keyPrefix,
    })
    const { sends, requests } = limits as Required<RateLimits>
    const counted = async (name: string, user: string) =>
      Number(await current.direct.get(`${rateLimitPrefix(keyPrefix, name)}:${rateLimitKey(user)}`))
    return { sends, requests, breaker: state.breaker, counted }
  }

  /**
   * Once Redis answers: the first user whose send is allowed again. A
   * connection that was slow may still owe late replies for a moment, so an
   * attempt may be refused; each attempt is a user of its own.
   */
  async function allowedAgain(sends: RateLimiter) {
    const deadline = Date.now() + 10_000
    for (;;) {
      const user = uniqueName('back')
      const decision = await sends.consume(user).catch(() => undefined)
      if (decision?.allowed) return user
      if (Date.now() > deadline) throw new Error('sends were not allowed again within 10 s')
      await sleep(50)
    }
  }

  test('a read first: one requests deadline, then local counts up to the limit; sends refused at once; back, counted in Redis', async () => {
    fault = await open()
    const { sends, requests, breaker, counted } = await service(fault)
    expect((await sends.consume('before')).allowed).toBe(true)
    expect(await counted('sends', 'before')).toBe(1)

    await fault.start()
    const first = await timed(() => requests.consume('alice'))
    expect(first.value?.allowed).toBe(true)
    expect(first.ms).toBeLessThan(REQUESTS_TIMEOUT_MS + ROOM_MS)
    expect(breaker?.available).toBe(false)
    // The rest of the window is counted in the process: the limit, no more.
    const rest = await timed(() => consumeTimes(requests, 'alice', REQUESTS + 3))
    expect(rest.value).toBe(REQUESTS - 1)
    expect(rest.ms).toBeLessThan(IMMEDIATE_MS)
    // A send needs the turn state there anyway: refused at once, as unavailable.
    const send = await timed(() => sends.consume('alice'))
    expect(send.error).toMatchObject({ name: 'StoreUnavailableError', store: 'state' })
    expect(send.ms).toBeLessThan(IMMEDIATE_MS)

    await fault.end()
    const bob = await allowedAgain(sends)
    expect(breaker?.available).toBe(true)
    expect(await counted('sends', bob)).toBe(1)
  }, 30_000)

  test('a send first: refused within the state deadline, then nothing waits; back, sends are allowed and counted again', async () => {
    fault = await open()
    const { sends, requests, breaker, counted } = await service(fault)
    await fault.start()
    const first = await timed(() => sends.consume('carol'))
    expect(first.error).toMatchObject({ name: 'StoreUnavailableError', store: 'state' })
    expect(first.ms).toBeLessThan(STATE_TIMEOUT_MS + ROOM_MS)
    const read = await timed(() => requests.consume('carol'))
    expect(read.value?.allowed).toBe(true)
    expect(read.ms).toBeLessThan(IMMEDIATE_MS)

    await fault.end()
    // (carol's refused count may still land once Redis answers: it was sent.)
    const dave = await allowedAgain(sends)
    expect(breaker?.available).toBe(true)
    expect(await consumeTimes(sends, dave, SENDS)).toBe(SENDS - 1)
    expect(await counted('sends', dave)).toBe(SENDS + 1)
  }, 30_000)
}

if (REDIS_SERVER) {
  for (const kind of ['SIGSTOP', 'killed'] as const)
    describe(`rate limits on a private redis-server, ${kind}`, () => {
      suite(async () => {
        const server: PrivateRedis = await startPrivateRedis()
        const direct = new Redis(server.url)
        return {
          name: kind,
          url: server.url,
          direct,
          start: () => (kind === 'SIGSTOP' ? server.freeze() : server.kill()),
          end: () => (kind === 'SIGSTOP' ? server.thaw() : server.start()),
          async close() {
            direct.disconnect()
            await server.stop()
          },
        }
      })
    })
} else console.log('rate-limit-outage.test.ts: private redis-server cases skipped (not installed)')

if (TEST_REDIS_URL) {
  const redisUrl = TEST_REDIS_URL
  const direct = new Redis(redisUrl)
  afterAll(() => direct.disconnect())
  const faults = {
    freeze: (proxy: FaultProxy) => proxy.freeze(),
    drop: (proxy: FaultProxy) => proxy.drop(),
    // Every byte late by more than any deadline: as slow as frozen.
    'delay past the deadline': (proxy: FaultProxy) => proxy.delay(STATE_TIMEOUT_MS * 3),
  }
  for (const [name, start] of Object.entries(faults))
    describe(`rate limits behind a fault proxy: ${name}`, () => {
      suite(async () => {
        const proxy = await startFaultProxy(targetOf(redisUrl))
        return {
          name,
          url: throughProxy(redisUrl, proxy),
          direct,
          start: () => start(proxy),
          end() {
            proxy.delay(0)
            proxy.pass()
          },
          close: () => proxy.close(),
        }
      })
    })
}
