// The event-loop lag monitor (src/observability/event-loop-lag.ts) against a
// loop this test really blocks: a busy loop of STALL_MS is seen by
// lagSince() from before it (also while the stall still goes on, before any
// tick could record it), counts only from `since` on, and stalls add up; a
// loop kept busy at every turn shows in recentLagMs(), one stall once over
// does not. Bounds are generous: how little lag a quiet loop has depends on
// the machine.
import { afterEach, describe, expect, test } from 'bun:test'
import { type EventLoopLag, startEventLoopLag } from '../../src/observability/event-loop-lag.ts'

const STALL_MS = 300
/** A stall is seen as at least this: the ticks are 10 ms apart. */
const SEEN_MS = STALL_MS - 20

/** Blocks this thread for ms. */
function busy(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until) {}
}

/** Resolves after the monitor's next few ticks had their chance to run. */
const ticks = () => new Promise((resolve) => setTimeout(resolve, 50))

let monitor: EventLoopLag | undefined
afterEach(() => monitor?.stop())

describe('event loop lag', () => {
  test('a stall shows in lagSince from before it, also while it goes on', async () => {
    monitor = startEventLoopLag()
    await ticks()
    const before = performance.now()
    busy(STALL_MS)
    // Still inside the stall, as a deadline's timer firing right after it would ask.
    expect(monitor.lagSince(before)).toBeGreaterThanOrEqual(SEEN_MS)
    await ticks()
    expect(monitor.lagSince(before)).toBeGreaterThanOrEqual(SEEN_MS)
  })

  test('recentLagMs: a loop behind at every turn shows; one stall, once over, does not', async () => {
    monitor = startEventLoopLag()
    await ticks()
    // Busy 60 ms at every turn of the loop for over a second: every tick runs about 50 ms late.
    const until = performance.now() + 1_200
    while (performance.now() < until) {
      busy(60)
      await new Promise((resolve) => setImmediate(resolve))
    }
    expect(monitor.recentLagMs()).toBeGreaterThanOrEqual(25)
    // Then one long stall, and the loop idle again for a little while.
    await new Promise((resolve) => setTimeout(resolve, 1_100))
    busy(STALL_MS)
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect(monitor.recentLagMs()).toBeLessThan(STALL_MS / 2)
  })

  test('reset (the server listens): the stalls of starting no longer count', async () => {
    monitor = startEventLoopLag()
    await ticks()
    const before = performance.now()
    busy(STALL_MS)
    await new Promise((resolve) => setTimeout(resolve, 15))
    expect(monitor.lagSince(before)).toBeGreaterThanOrEqual(SEEN_MS)
    monitor.reset()
    expect(monitor.lagSince(before)).toBeLessThan(SEEN_MS)
    expect(monitor.recentLagMs()).toBe(0)
  })

  test('lag before `since` does not count', async () => {
    monitor = startEventLoopLag()
    await ticks()
    busy(STALL_MS)
    await ticks()
    const after = performance.now()
    // Only the time since `after` can count, however long the stall before it.
    expect(monitor.lagSince(after)).toBeLessThanOrEqual(performance.now() - after)
  })

  test('stalls add up over a window', async () => {
    monitor = startEventLoopLag()
    await ticks()
    const before = performance.now()
    for (let i = 0; i < 3; i++) {
      busy(STALL_MS / 2)
      await ticks()
    }
    expect(monitor.lagSince(before)).toBeGreaterThanOrEqual(3 * (STALL_MS / 2 - 20))
  })
})
