// Overload is not an outage (CONTRACT §19), over real Redis with this test's
// own event loop really blocked (a busy loop) and its lag really measured
// (observability/event-loop-lag.ts feeding storage/store-failure.ts, as
// index.ts wires them):
//
// - a healthy Redis (TEST_REDIS_URL) whose answers this process was too busy
//   to read in time is never marked unavailable: a deadline that passed
//   during the stall fails that call as overloaded and opens no breaker -
//   while the same stall judged without the lag does open it (the control:
//   this is what the busy bench machine saw);
// - a frozen private redis-server (SIGSTOP) is still marked unavailable by
//   the lag-aware breaker, and the breaker closes once it is thawed.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type EventLoopLag, startEventLoopLag } from '../../src/observability/event-loop-lag.ts'
import { openRedisState, type State } from '../../src/state/state.ts'
import { isStateUnavailable } from '../../src/state/state-unavailable.ts'
import {
  createStoreFailurePolicy,
  type StoreFailurePolicy,
  StoreOverloadedError,
} from '../../src/storage/store-failure.ts'
import { TEST_REDIS_URL, uniqueName } from '../support/backends.ts'
import { type PrivateRedis, REDIS_SERVER, startPrivateRedis } from '../support/redis-server.ts'
import { sleep } from '../support/server-process.ts'

/** The deadline of the state commands here: short, so a stall of STALL_MS passes it. */
const DEADLINE_MS = 200
const STALL_MS = 600

/** Blocks this thread for ms, as a saturated process does. */
function busy(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {}
}

/**
 * Runs call from a timer due just after the deadline's: once a stall has
 * made both overdue, the loop runs the deadline's first and then issues the
 * command - a process so far behind that its own backlog delays its commands.
 */
const late = <T>(call: () => Promise<T>) => sleep(DEADLINE_MS + 50).then(call)

let lag: EventLoopLag
let failures: StoreFailurePolicy

beforeAll(async () => {
  lag = startEventLoopLag()
  failures = createStoreFailurePolicy({ lag })
  // A few ticks, so the monitor has a baseline.
  await sleep(50)
})
afterAll(() => lag.stop())

const openState = (url: string, judged: StoreFailurePolicy | undefined, commandTimeoutMs: number) =>
  openRedisState(url, {
    retentionMs: 600_000,
    keyPrefix: `${uniqueName('overload')}:`,
    commandTimeoutMs,
    ...(judged ? { failures: judged } : {}),
  })

if (TEST_REDIS_URL) {
  const redisUrl = TEST_REDIS_URL
  describe('a healthy Redis and a blocked event loop', () => {
    let state: State
    let unjudged: State

    beforeAll(async () => {
      state = await openState(redisUrl, failures, DEADLINE_MS)
      unjudged = await openState(redisUrl, undefined, DEADLINE_MS)
    })
    afterAll(async () => {
      await state?.close()
      await unjudged?.close()
    })

    test('a deadline that passes while this process stalls fails as overloaded and opens no breaker', async () => {
      const breaker = state.breaker
      if (!breaker) throw new Error('a Redis state has a breaker')
      for (let round = 0; round < 3; round++) {
        // The command is issued once the loop gets to it; its deadline runs from now.
        const call = breaker.run(() => late(() => state.ping()), DEADLINE_MS).catch((e) => e)
        busy(STALL_MS)
        expect(await call).toBeInstanceOf(StoreOverloadedError)
        expect(breaker.available).toBe(true)
      }
      // ioredis's own commandTimeout against the stall, through the state's ports:
      // whichever the loop runs first, the reply or the timer, nothing opens.
      for (let round = 0; round < 4; round++) {
        const call = state.logs.info(`m${round}`).catch((e) => e)
        busy(STALL_MS)
        const outcome = await call
        if (outcome !== undefined) expect(outcome).toBeInstanceOf(StoreOverloadedError)
        expect(isStateUnavailable(outcome)).toBe(false)
        expect(breaker.available).toBe(true)
      }
      await state.ping()
    })

    test('the control: the same stall judged without the lag marks the healthy store unavailable', async () => {
      const breaker = unjudged.breaker
      if (!breaker) throw new Error('a Redis state has a breaker')
      const call = breaker.run(() => late(() => unjudged.ping()), DEADLINE_MS).catch((e) => e)
      busy(STALL_MS)
      expect(isStateUnavailable(await call)).toBe(true)
      expect(breaker.available).toBe(false)
    })
  })
}

describe.skipIf(!REDIS_SERVER)('a frozen Redis (SIGSTOP), judged with the lag', () => {
  let redis: PrivateRedis
  let state: State

  beforeAll(async () => {
    redis = await startPrivateRedis()
    // The state's default deadline, as a deployment has it.
    state = await openState(redis.url, failures, 2_000)
  }, 30_000)
  afterAll(async () => {
    redis?.thaw()
    await state?.close()
    await redis?.stop()
  })

  test('is marked unavailable, and available again once thawed', async () => {
    const breaker = state.breaker
    if (!breaker) throw new Error('a Redis state has a breaker')
    redis.freeze()
    const failure = await state.logs.info('m1').catch((e) => e)
    expect(failure).not.toBeInstanceOf(StoreOverloadedError)
    expect(isStateUnavailable(failure)).toBe(true)
    expect(breaker.available).toBe(false)
    // A send's open is then refused at once, as unavailable.
    const refused = await state.logs
      .open({ messageId: 'm2', conversationId: 'c', userId: 'u' })
      .catch((e) => e)
    expect(isStateUnavailable(refused)).toBe(true)
    redis.thaw()
    while (!breaker.available) await sleep(20)
    await state.ping()
  }, 30_000)
})
