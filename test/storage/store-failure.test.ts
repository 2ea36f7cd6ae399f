// The one rule of what a store's failure says about the store
// (src/storage/store-failure.ts, CONTRACT §19 "overload is not an outage"),
// with an injected lag source and clock: a connection error is an outage
// whatever the lag; a missed deadline is one only while the loop kept time
// for most of the window. Then the same rule as the breaker applies it to
// run() (a hanging store) and to failures reported from outside (the
// state's ports, state-gate.ts), so the cache, the rate limits and the state
// all open - or do not open - on the same evidence. Over real Redis, with a
// really blocked event loop and a SIGSTOPped server: test/faults/overload.test.ts.
import { describe, expect, test } from 'bun:test'
import { gateTurnLogs } from '../../src/state/state-gate.ts'
import { createMemoryTurnLogs } from '../../src/state/turn-log/memory-turn-logs.ts'
import { createStoreBreaker, StoreUnavailableError } from '../../src/storage/store-breaker.ts'
import {
  createStoreFailurePolicy,
  isMissedDeadline,
  LAG_SHARE,
  type LagSource,
  StoreDeadlineError,
  StoreOverloadedError,
} from '../../src/storage/store-failure.ts'

/** A clock the test moves, and a loop that lagged `lagged` ms since whatever time is asked. */
function scene(lagged: number) {
  const clock = { now: 1_000, lagged, asked: [] as number[] }
  const lag: LagSource = {
    lagSince(since) {
      clock.asked.push(since)
      return clock.lagged
    },
  }
  const policy = createStoreFailurePolicy({ lag, now: () => clock.now })
  return { clock, policy }
}

const timedOut = () => new Error('Command timed out')
const closed = () => new Error('Connection is closed.')

describe('store failure policy', () => {
  test('a missed deadline: ioredis commandTimeout and withDeadline’s own, nothing else', () => {
    expect(isMissedDeadline(timedOut())).toBe(true)
    expect(isMissedDeadline(new StoreDeadlineError('state', 500))).toBe(true)
    // A deadline miss is still an unavailable store to code that only knows that much.
    expect(new StoreDeadlineError('cache', 500)).toBeInstanceOf(StoreUnavailableError)
    expect(isMissedDeadline(closed())).toBe(false)
    expect(isMissedDeadline(new StoreUnavailableError('state'))).toBe(false)
    expect(isMissedDeadline('Command timed out')).toBe(false)
    expect(isMissedDeadline(undefined)).toBe(false)
  })

  test('a deadline missed while the loop kept time is an outage; while it lagged, overload', () => {
    const { clock, policy } = scene(0)
    const startedAt = clock.now
    clock.now += 2_000
    expect(policy.judge(timedOut(), startedAt)).toBe('outage')
    // The lag asked for is the deadline's window, from the call's start.
    expect(clock.asked).toEqual([startedAt])
    clock.lagged = 2_000 * LAG_SHARE - 1
    expect(policy.judge(timedOut(), startedAt)).toBe('outage')
    clock.lagged = 2_000 * LAG_SHARE
    expect(policy.judge(timedOut(), startedAt)).toBe('overload')
    expect(policy.judge(new StoreDeadlineError('cache', 2_000), startedAt)).toBe('overload')
  })

  test('a deadline missed while the store answered other calls is overload; answers before the call, or another store’s, are not', () => {
    const { clock, policy } = scene(0)
    policy.answered('state')
    const startedAt = ++clock.now
    clock.now += 2_000
    // The last answer came before this call began: nothing says the store is up.
    expect(policy.judge(timedOut(), startedAt, 'state')).toBe('outage')
    policy.answered('cache')
    expect(policy.judge(timedOut(), startedAt, 'state')).toBe('outage')
    // The store answered another call meanwhile: up, only slow (a starved machine, a queue).
    policy.answered('state')
    expect(policy.judge(timedOut(), startedAt, 'state')).toBe('overload')
    // A connection error stays an outage.
    expect(policy.judge(closed(), startedAt, 'state')).toBe('outage')
  })

  test('the share is of the window: the same lag is overload for a short one, not a long one', () => {
    const { clock, policy } = scene(300)
    const startedAt = clock.now
    clock.now += 500
    expect(policy.judge(timedOut(), startedAt)).toBe('overload')
    clock.now = startedAt + 5_000
    expect(policy.judge(timedOut(), startedAt)).toBe('outage')
  })

  test('a connection error is an outage however much the loop lagged', () => {
    const { clock, policy } = scene(1_000_000)
    const startedAt = clock.now
    clock.now += 2_000
    for (const error of [
      closed(),
      Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }),
      new Error('LOADING Redis is loading the dataset in memory'),
      new StoreUnavailableError('state', 'the connection was lost'),
    ])
      expect(policy.judge(error, startedAt)).toBe('outage')
    // It does not even ask.
    expect(clock.asked).toEqual([])
  })

  test('no lag source: every miss is the store’s (the default of tools and tests)', () => {
    const policy = createStoreFailurePolicy()
    expect(policy.judge(timedOut(), policy.now() - 1_000)).toBe('outage')
  })
})

/** A breaker over a store whose probe never answers, judged on the real clock with a loop that lagged `lagged` ms. */
function hangingBreaker(lagged: number) {
  return createStoreBreaker({
    store: 'state',
    timeoutMs: 30,
    probeIntervalMs: 10_000,
    probe: () => new Promise(() => {}),
    failures: createStoreFailurePolicy({ lag: { lagSince: () => lagged } }),
  })
}

describe('the breaker applies it', () => {
  test('run(): a hang while the loop lagged fails as overloaded and opens nothing', async () => {
    const breaker = hangingBreaker(1_000_000)
    const failure = await breaker.run(() => new Promise(() => {})).catch((error) => error)
    expect(failure).toBeInstanceOf(StoreOverloadedError)
    expect(failure).toMatchObject({ store: 'state' })
    expect(breaker.available).toBe(true)
    breaker.close()
  })

  test('run(): the same hang with the loop keeping time opens the breaker', async () => {
    const breaker = hangingBreaker(0)
    const failure = await breaker.run(() => new Promise(() => {})).catch((error) => error)
    expect(failure).toBeInstanceOf(StoreUnavailableError)
    expect(breaker.available).toBe(false)
    breaker.close()
  })

  test('run(): a connection error opens it while the loop lags', async () => {
    const breaker = hangingBreaker(1_000_000)
    await expect(breaker.run(() => Promise.reject(closed()))).rejects.toBeInstanceOf(
      StoreUnavailableError,
    )
    expect(breaker.available).toBe(false)
    breaker.close()
  })

  test("the state's ports: ioredis's timeout while the loop lagged is overload, not an outage", async () => {
    const { clock, policy } = scene(0)
    const breaker = createStoreBreaker({
      store: 'state',
      timeoutMs: 30,
      probeIntervalMs: 10_000,
      probe: () => new Promise(() => {}),
      failures: policy,
    })
    const inner = createMemoryTurnLogs({ retentionMs: 60_000 })
    const logs = gateTurnLogs(
      {
        ...inner,
        // ioredis's commandTimeout firing, 2 s after the call started.
        append: async () => {
          clock.now += 2_000
          throw timedOut()
        },
      },
      breaker,
    )
    clock.lagged = 1_500
    const failure = await logs.append('m1', ['x'], 0).catch((error) => error)
    expect(failure).toBeInstanceOf(StoreOverloadedError)
    expect((failure as Error).cause).toBeInstanceOf(Error)
    expect(breaker.available).toBe(true)
    // The same miss with the loop on time: the store's, as before.
    clock.lagged = 0
    await expect(logs.append('m1', ['x'], 0)).rejects.toThrow('Command timed out')
    expect(breaker.available).toBe(false)
    breaker.close()
  })
})
