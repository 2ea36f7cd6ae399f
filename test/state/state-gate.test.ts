// The turn state's ports in front of its breaker (src/state/state-gate.ts),
// over the in-process adapters with a fault switch: any call that fails
// because Redis cannot be reached opens the breaker - a running turn's append
// and a reader's follow as much as a request's open - while the caller's own
// errors (a fenced append, WRONGTYPE) open nothing; while open, the calls only
// a request waits for are refused at once without reaching the store, and
// those refusals do not count as failures: the probe still closes the breaker.
// Over real Redis the same breaker is exercised by test/faults/state-outage.test.ts.
import { describe, expect, test } from 'bun:test'
import { createMemoryLeases } from '../../src/state/memory-leases.ts'
import { createMemoryStopChannel } from '../../src/state/memory-stop-channel.ts'
import { gateLeases, gateStops, gateTurnLogs } from '../../src/state/state-gate.ts'
import { createMemoryTurnLogs } from '../../src/state/turn-log/memory-turn-logs.ts'
import { TurnLogFencedError, type TurnLogStore } from '../../src/state/turn-log/turn-log-store.ts'
import { createStoreBreaker, StoreUnavailableError } from '../../src/storage/store-breaker.ts'

/** A breaker whose probe answers only when the test says so. */
function heldBreaker() {
  let answer = () => {}
  let probes = 0
  const breaker = createStoreBreaker({
    store: 'state',
    timeoutMs: 1_000,
    probeIntervalMs: 10,
    probe: () => {
      probes++
      return new Promise<void>((resolve) => {
        answer = resolve
      })
    },
  })
  return {
    breaker,
    probes: () => probes,
    answerProbe: () => answer(),
  }
}

/** In-process logs whose calls fail as ioredis reports an outage while `down` is set. */
function faultyLogs() {
  const inner = createMemoryTurnLogs({ retentionMs: 60_000 })
  const fault = { down: false, reached: 0 }
  /** run, unless the store is down: then the deadline ioredis reports. */
  const reach = <T>(run: () => Promise<T>): Promise<T> => {
    fault.reached++
    return fault.down ? Promise.reject(new Error('Command timed out')) : run()
  }
  const logs: TurnLogStore = {
    ...inner,
    open: (...args) => reach(() => inner.open(...args)),
    append: (...args) => reach(() => inner.append(...args)),
    async *read(...args) {
      if (fault.down) throw new Error('Connection is closed.')
      yield* inner.read(...args)
    },
  }
  return { logs, fault }
}

const identity = (messageId: string) => ({ messageId, conversationId: 'c', userId: 'u' })

async function until(check: () => boolean) {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5))
  expect(check()).toBe(true)
}

describe('state gate', () => {
  test("a running turn's append that misses its deadline opens the breaker; a request's open is then refused at once", async () => {
    const { breaker } = heldBreaker()
    const { logs: inner, fault } = faultyLogs()
    const logs = gateTurnLogs(inner, breaker)
    await logs.open(identity('m1'))
    fault.down = true
    await expect(logs.append('m1', ['x'], 0)).rejects.toThrow('Command timed out')
    expect(breaker.available).toBe(false)
    const reached = fault.reached
    const refused = await logs.open(identity('m2')).catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(StoreUnavailableError)
    expect(fault.reached).toBe(reached)
    breaker.close()
  })

  test('a follower that loses its connection opens the breaker', async () => {
    const { breaker } = heldBreaker()
    const { logs: inner, fault } = faultyLogs()
    const logs = gateTurnLogs(inner, breaker)
    fault.down = true
    const reading = (async () => {
      for await (const _ of logs.read('m1', 0)) {
      }
    })()
    await expect(reading).rejects.toThrow('Connection is closed.')
    expect(breaker.available).toBe(false)
    breaker.close()
  })

  test("the caller's own errors open nothing", async () => {
    const { breaker } = heldBreaker()
    const inner = createMemoryTurnLogs({ retentionMs: 60_000 })
    const logs = gateTurnLogs(
      {
        ...inner,
        append: () => Promise.reject(new TurnLogFencedError('m1')),
        finish: () => Promise.reject(new Error('WRONGTYPE Operation against a key')),
      },
      breaker,
    )
    await expect(logs.append('m1', ['x'], 0)).rejects.toBeInstanceOf(TurnLogFencedError)
    await expect(logs.finish('m1', 0)).rejects.toThrow('WRONGTYPE')
    expect(breaker.available).toBe(true)
    breaker.close()
  })

  test('leases and stops report outages too; a stop is refused while open', async () => {
    const { breaker } = heldBreaker()
    const leases = gateLeases(
      {
        ...createMemoryLeases(),
        renew: () => Promise.reject(Object.assign(new Error('reset'), { code: 'ECONNRESET' })),
      },
      breaker,
    )
    const lease = { conversationId: 'c', token: 1 }
    await expect(leases.renew(lease, 1_000)).rejects.toThrow('reset')
    expect(breaker.available).toBe(false)
    let published = 0
    const inner = createMemoryStopChannel()
    const stops = gateStops(
      {
        ...inner,
        publish: (request) => {
          published++
          return inner.publish(request)
        },
      },
      breaker,
    )
    await expect(stops.publish({ conversationId: 'c', messageId: 'm' })).rejects.toBeInstanceOf(
      StoreUnavailableError,
    )
    expect(published).toBe(0)
    breaker.close()
  })

  test('refusals while open do not keep the breaker open: the probe closes it', async () => {
    const held = heldBreaker()
    const { logs: inner, fault } = faultyLogs()
    const logs = gateTurnLogs(inner, held.breaker)
    fault.down = true
    await expect(logs.append('m1', ['x'], 0)).rejects.toThrow()
    fault.down = false
    await until(() => held.probes() === 1)
    // Requests refused while the probe is out...
    for (let i = 0; i < 5; i++)
      await expect(logs.open(identity(`r${i}`))).rejects.toBeInstanceOf(StoreUnavailableError)
    // ...do not make its answer count for nothing.
    held.answerProbe()
    await until(() => held.breaker.available)
    await logs.open(identity('after'))
    held.breaker.close()
  })
})
