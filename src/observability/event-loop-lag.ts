// How late this process's event loop runs, measured by a timer's drift: every
// intervalMs a tick records how much later than asked it ran. Two readings:
//
// - lagSince(t): the lag accumulated since t, a stall going on now included.
//   The stores' failure policy (storage/store-failure.ts) asks it when a
//   deadline passed: a deadline missed while the loop was itself behind for
//   much of the window says nothing about the store (CONTRACT §19).
// - recentLagMs(): how late the loop typically ran over the last second (the
//   median of its ticks' delays, a stall going on now counted as one), which
//   admission control (http/admission.ts) sheds new sends on and /metrics
//   shows. The median, not the longest: one stall (a fresh process compiling
//   its hot paths, a GC, a large import) is over once it is over, and must
//   not shed the sends after it; a loop behind at every turn is overloaded.
//
// A timer rather than perf_hooks' monitorEventLoopDelay: its histogram has no
// time axis, and the policy needs the lag within one call's window. The ticks
// are a few per ten milliseconds of one comparison each; the timer is unref'd.
import type { LagSource } from '../storage/store-failure.ts'

export interface EventLoopLag extends LagSource {
  /** The median tick delay (ms) over the last second, a stall going on now counted as a tick. */
  recentLagMs(): number
  /**
   * Forgets the ticks so far: called once the server listens, so the stalls
   * of starting (opening PGlite, compiling) never shed the first sends.
   */
  reset(): void
  stop(): void
}

export interface EventLoopLagOptions {
  /** How often a tick is asked for (default 10 ms): the resolution of the readings. */
  intervalMs?: number
  /** Ticks remembered (default 4,096: at least 40 s at 10 ms, longer than any deadline). */
  history?: number
  now?: () => number
}

/** The window recentLagMs looks back over. */
const RECENT_MS = 1_000

export function startEventLoopLag(options: EventLoopLagOptions = {}): EventLoopLag {
  const intervalMs = options.intervalMs ?? 10
  const size = options.history ?? 4_096
  const now = options.now ?? (() => performance.now())
  // A ring of ticks: when each ran, and how late.
  const at = new Float64Array(size)
  const late = new Float64Array(size)
  let count = 0
  let head = 0
  let lastTick = now()
  /** The delays of the last second's ticks, sorted for their median (reused: no garbage per call). */
  const recent = new Float64Array(size + 1)
  let timer: ReturnType<typeof setTimeout> | undefined

  const tick = () => {
    const time = now()
    at[head] = time
    late[head] = Math.max(0, time - lastTick - intervalMs)
    head = (head + 1) % size
    if (count < size) count++
    lastTick = time
    timer = setTimeout(tick, intervalMs)
    timer.unref?.()
  }
  timer = setTimeout(tick, intervalMs)
  timer.unref?.()

  /** How late the tick that is due now already is (a stall the ring has not seen yet). */
  const ongoing = (time: number) => Math.max(0, time - lastTick - intervalMs)

  return {
    lagSince(since) {
      const time = now()
      let total = Math.min(ongoing(time), time - since)
      for (let i = 1; i <= count; i++) {
        const index = (head - i + size) % size
        const tickAt = at[index] as number
        if (tickAt <= since) break
        // A tick's delay ended at tickAt; only the part after `since` counts.
        total += Math.min(late[index] as number, tickAt - since)
      }
      return total
    },
    recentLagMs() {
      const time = now()
      const current = ongoing(time)
      let n = 0
      // A stall going on now counts only once it is a tick late: an on-time loop has none.
      if (current > 0) recent[n++] = current
      for (let i = 1; i <= count; i++) {
        const index = (head - i + size) % size
        if ((at[index] as number) <= time - RECENT_MS) break
        recent[n++] = late[index] as number
      }
      if (n === 0) return 0
      const sorted = recent.subarray(0, n).sort()
      return sorted[Math.floor(n / 2)] as number
    },
    reset() {
      count = 0
      lastTick = now()
    },
    stop() {
      clearTimeout(timer)
    },
  }
}
