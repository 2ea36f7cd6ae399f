// The one deadline-and-breaker policy of every Redis store (store-breaker.ts),
// over a store with a fault switch: a command past its deadline (its own or
// the breaker's) fails with a StoreUnavailableError naming the store and opens
// the breaker; while open nothing reaches the store and run() fails at once;
// a refusal is the caller's error and opens nothing; the probe closes the
// breaker only once the store answers and `recover` has run, and not when a
// failure overlapped it; close() stops the probe. Linked breakers (stores on
// one Redis) open together and close each by its own probe. Over real Redis: the
// resilient cache (resilient-cache.test.ts), the rate limits and the state
// (test/faults/rate-limit-outage.test.ts, state-outage.test.ts).
import { describe, expect, test } from 'bun:test'
import {
  createBreakerLink,
  createStoreBreaker,
  type StoreBreaker,
  type StoreBreakerOptions,
  StoreUnavailableError,
  withDeadline,
} from '../../src/storage/store-breaker.ts'
import { sleep } from '../support/server-process.ts'

const TIMEOUT_MS = 100
const PROBE_MS = 30
/** Generous bound for a call that must not wait for the store at all. */
const IMMEDIATE_MS = 50

type Fault = 'none' | 'hang' | 'fail'

/** A store whose commands (and pings) can hang or fail, counting what reaches it. */
function switchable() {
  const store = { fault: 'none' as Fault, calls: 0, recovered: 0 }
  const answer = <T>(value: T): Promise<T> => {
    store.calls++
    if (store.fault === 'hang') return new Promise<T>(() => {})
    if (store.fault === 'fail') return Promise.reject(new Error('Connection is closed.'))
    return Promise.resolve(value)
  }
  return { store, answer }
}

function breakerOver(
  s: ReturnType<typeof switchable>,
  changes: string[] = [],
  extra: Partial<StoreBreakerOptions> = {},
): StoreBreaker {
  return createStoreBreaker({
    ...extra,
    store: extra.store ?? 'state',
    timeoutMs: TIMEOUT_MS,
    probeIntervalMs: PROBE_MS,
    probe: () => s.answer('PONG'),
    recover: async () => {
      s.store.recovered++
    },
    onStateChange: (state) => changes.push(state),
  })
}

async function eventually(check: () => boolean, withinMs: number) {
  const deadline = Date.now() + withinMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms`)
    await sleep(5)
  }
}

describe('store breaker', () => {
  test('withDeadline fails with the store named once ms pass, and passes answers and errors on', async () => {
    const late = withDeadline(() => new Promise(() => {}), 20, 'cache')
    await expect(late).rejects.toBeInstanceOf(StoreUnavailableError)
    await expect(late).rejects.toMatchObject({ store: 'cache' })
    expect(await withDeadline(async () => 'ok', 20, 'cache')).toBe('ok')
    await expect(
      withDeadline(() => Promise.reject(new Error('boom')), 20, 'cache'),
    ).rejects.toThrow('boom')
  })

  test('a hanging store costs one deadline, then nothing until it answers; recover runs first', async () => {
    const s = switchable()
    const changes: string[] = []
    const breaker = breakerOver(s, changes)
    expect(await breaker.run(() => s.answer(1))).toBe(1)

    s.store.fault = 'hang'
    let started = performance.now()
    const first = breaker.run(() => s.answer(2))
    await expect(first).rejects.toMatchObject({ name: 'StoreUnavailableError', store: 'state' })
    const ms = performance.now() - started
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 5)
    expect(ms).toBeLessThan(TIMEOUT_MS + 500)
    expect(breaker.available).toBe(false)
    expect(changes).toEqual(['open'])

    // Open: run() fails at once and sends nothing (only the probe reaches the store).
    started = performance.now()
    const callsWhenOpened = s.store.calls
    let ran = 0
    for (let i = 0; i < 20; i++)
      await expect(breaker.run(async () => ++ran)).rejects.toBeInstanceOf(StoreUnavailableError)
    expect(ran).toBe(0)
    expect(performance.now() - started).toBeLessThan(IMMEDIATE_MS)
    expect(s.store.calls - callsWhenOpened).toBeLessThanOrEqual(1)

    s.store.fault = 'none'
    await eventually(() => breaker.available, 1_000)
    expect(s.store.recovered).toBe(1)
    expect(changes).toEqual(['open', 'closed'])
    expect(await breaker.run(() => s.answer(3))).toBe(3)
    breaker.close()
  })

  test('a call may have a deadline of its own, shorter than the breaker’s', async () => {
    const s = switchable()
    const breaker = breakerOver(s)
    s.store.fault = 'hang'
    const started = performance.now()
    await expect(breaker.run(() => s.answer(1), 20)).rejects.toBeInstanceOf(StoreUnavailableError)
    expect(performance.now() - started).toBeLessThan(TIMEOUT_MS)
    expect(breaker.available).toBe(false)
    breaker.close()
  })

  test('a failing store opens it too, with the failure wrapped as unavailable', async () => {
    const s = switchable()
    const breaker = breakerOver(s)
    s.store.fault = 'fail'
    const error = await breaker.run(() => s.answer(1)).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(StoreUnavailableError)
    expect((error as Error).message).toContain('Connection is closed.')
    expect(breaker.available).toBe(false)
    breaker.close()
  })

  test('a refusal (WRONGTYPE, ERR) is passed on and opens nothing', async () => {
    const s = switchable()
    const breaker = breakerOver(s)
    const refusal = new Error('WRONGTYPE Operation against a key holding the wrong kind of value')
    await expect(breaker.run(() => Promise.reject(refusal))).rejects.toBe(refusal)
    expect(breaker.available).toBe(true)
    breaker.close()
  })

  test('trip() opens it without a failed command; a store still down when probed keeps it open', async () => {
    const s = switchable()
    const breaker = breakerOver(s)
    s.store.fault = 'fail'
    breaker.trip(new Error('the connection was lost'))
    expect(breaker.available).toBe(false)
    await sleep(PROBE_MS * 4)
    expect(breaker.available).toBe(false)
    s.store.fault = 'none'
    await eventually(() => breaker.available, 1_000)
    breaker.close()
  })

  test('a failure while the probe runs makes it try again rather than close', async () => {
    const s = switchable()
    let releaseRecover = () => {}
    let recovering = () => {}
    const inRecover = new Promise<void>((resolve) => {
      recovering = resolve
    })
    const breaker = createStoreBreaker({
      store: 'cache',
      timeoutMs: 1_000,
      probeIntervalMs: PROBE_MS,
      probe: () => s.answer('PONG'),
      recover: () =>
        new Promise<void>((resolve) => {
          releaseRecover = resolve
          recovering()
        }),
    })
    breaker.trip(new Error('lost'))
    await inRecover
    // Fails again while the probe is recovering: that probe must not close it.
    breaker.trip(new Error('lost again'))
    releaseRecover()
    await sleep(5)
    expect(breaker.available).toBe(false)
    breaker.close()
  })

  test('close() stops the probe, and run() fails from then on', async () => {
    const s = switchable()
    const breaker = breakerOver(s)
    s.store.fault = 'fail'
    breaker.trip(new Error('lost'))
    breaker.close()
    const calls = s.store.calls
    await sleep(PROBE_MS * 4)
    expect(s.store.calls).toBe(calls)
    s.store.fault = 'none'
    await expect(breaker.run(() => s.answer(1))).rejects.toBeInstanceOf(StoreUnavailableError)
    expect(breaker.available).toBe(false)
  })

  test("linked breakers (one Redis) open together on either one's missed deadline, each closes by its own probe, and a lost connection opens only its own", async () => {
    const link = createBreakerLink()
    const cacheStore = switchable()
    const stateStore = switchable()
    const cacheChanges: string[] = []
    const stateChanges: string[] = []
    const cache = breakerOver(cacheStore, cacheChanges, { store: 'cache', link })
    const state = breakerOver(stateStore, stateChanges, { link })
    const unlinked = breakerOver(switchable())

    stateStore.store.fault = 'hang'
    cacheStore.store.fault = 'hang'
    await expect(state.run(() => stateStore.answer(1))).rejects.toBeInstanceOf(
      StoreUnavailableError,
    )
    // The cache never missed a deadline of its own: it is open all the same,
    // and a read through it fails at once without reaching the store.
    expect(cache.available).toBe(false)
    expect(cacheChanges).toEqual(['open'])
    const reached = cacheStore.store.calls
    const started = performance.now()
    const refused = await cache.run(() => cacheStore.answer(2)).catch((e: unknown) => e)
    expect(performance.now() - started).toBeLessThan(IMMEDIATE_MS)
    expect(refused).toMatchObject({ name: 'StoreUnavailableError', store: 'cache' })
    expect(cacheStore.store.calls - reached).toBeLessThanOrEqual(1)
    expect(unlinked.available).toBe(true)

    // Each closes by its own probe (and the cache's recover): the cache's
    // store answers first, so the cache closes while the state stays open.
    cacheStore.store.fault = 'none'
    await eventually(() => cache.available, 1_000)
    expect(cacheStore.store.recovered).toBe(1)
    expect(state.available).toBe(false)
    stateStore.store.fault = 'none'
    await eventually(() => state.available, 1_000)
    expect(stateChanges).toEqual(['open', 'closed'])
    expect(cacheChanges).toEqual(['open', 'closed'])

    // The other way round: the cache's missed deadline opens the state.
    cacheStore.store.fault = 'hang'
    await expect(cache.run(() => cacheStore.answer(3))).rejects.toBeInstanceOf(
      StoreUnavailableError,
    )
    expect(state.available).toBe(false)
    cacheStore.store.fault = 'none'
    await eventually(() => state.available && cache.available, 1_000)

    // A lost connection (trip) is its own client's: the cache's (on a Cluster
    // perhaps a replica's) leaves the state's sends alone.
    cache.trip(new Error('the connection was lost'))
    expect(cache.available).toBe(false)
    expect(state.available).toBe(true)
    await eventually(() => cache.available, 1_000)
    expect(stateChanges).toEqual(['open', 'closed', 'open', 'closed'])

    // A closed breaker leaves the link: its partner's failures no longer reach it.
    expect(cacheChanges).toEqual(['open', 'closed', 'open', 'closed', 'open', 'closed'])
    cache.close()
    stateStore.store.fault = 'hang'
    await expect(state.run(() => stateStore.answer(3))).rejects.toBeInstanceOf(
      StoreUnavailableError,
    )
    expect(cacheChanges).toHaveLength(6)
    state.close()
    unlinked.close()
  })
})
