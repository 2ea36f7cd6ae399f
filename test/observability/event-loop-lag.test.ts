// The event-loop lag monitor (src/observability/event-loop-lag.ts) against a
// loop this test really blocks: a busy loop of STALL_MS is seen by
// lagSince() from before it (also while the stall still goes on, before any
// tick could record it), counts only from `since` on, and shows in
// recentLagMs(). Only lower bounds: how little lag a quiet loop has depends
// on the machine.
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
  test('a stall shows in lagSince from before it and in recentLagMs', async () => {
    monitor = startEventLoopLag()
    await ticks()
    const before = performance.now()
    busy(STALL_MS)
    // Still inside the stall, as a deadline's timer firing right after it would ask.
    expect(monitor.lagSince(before)).toBeGreaterThanOrEqual(SEEN_MS)
    await ticks()
    expect(monitor.lagSince(before)).toBeGreaterThanOrEqual(SEEN_MS)
    expect(monitor.recentLagMs()).toBeGreaterThanOrEqual(SEEN_MS)
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
