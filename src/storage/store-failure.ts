// What a store's failure says about the store (CONTRACT §19, "overload is not
// an outage"): the one rule the breakers (store-breaker.ts) apply to every
// failed call, the state's ports (state-gate.ts) through them, and so what
// the error handler answers.
//
// - A connection error (refused, reset, closed, a failover) is evidence about
//   the store: an outage.
// - A deadline that passed is evidence only when this process was itself
//   keeping time meanwhile, and the store answered nothing else since the
//   call began (a store that answers others is up, only slow: a starved
//   machine, a queue of work). A saturated event loop (or a CPU hog starving it)
//   runs the deadline's timer before the reply that arrived long ago, so a
//   healthy store "misses" it. The event loop's lag is measured (LagSource,
//   observability/event-loop-lag.ts); when the lag accumulated over the
//   deadline's window reaches LAG_SHARE of that window, the miss says nothing
//   about the store: the call fails as overloaded (StoreOverloadedError, a 503
//   `overloaded` for a request), and no breaker opens.
//
// A frozen store stays an outage on a loaded machine: being late for half of
// the window is not ordinary scheduling noise; that is a process that cannot
// keep its own time, and then even the probe's deadline is no evidence.

/** What a store holds, named in errors and logs. */
export type StoreName = 'cache' | 'state' | 'database'

/** The store is not used right now: its breaker is open, or it missed a deadline. */
export class StoreUnavailableError extends Error {
  constructor(
    readonly store: StoreName,
    message = `the ${store} store is unavailable`,
  ) {
    super(message)
    this.name = 'StoreUnavailableError'
  }
}

/** How far behind this process's event loop ran (observability/event-loop-lag.ts implements it). */
export interface LagSource {
  /**
   * Milliseconds the event loop ran late in total since `since` (a time on
   * the policy's clock, performance.now()), a stall going on now included.
   */
  lagSince(since: number): number
}

/** No lag measured: every missed deadline is about the store (tests, tools). */
export const NO_LAG: LagSource = { lagSince: () => 0 }

/**
 * The share of a deadline's window the loop may have run late with the miss
 * still counting as the store's: at half, the process was stalled as long as
 * it kept time, and its timers say more about itself than about the store.
 */
export const LAG_SHARE = 0.5

/** A deadline passed while this process lagged: nothing is known about the store. */
export class StoreOverloadedError extends Error {
  constructor(
    readonly store: StoreName,
    cause?: unknown,
    message = `this process was too busy to hear the ${store} store in time`,
  ) {
    super(message, { cause })
    this.name = 'StoreOverloadedError'
  }
}

/** A deadline the store missed (withDeadline's): unavailable to anyone who knows only that much. */
export class StoreDeadlineError extends StoreUnavailableError {
  constructor(store: StoreName, ms: number) {
    super(store, `the ${store} store gave no answer within ${ms} ms`)
  }
}

/** Whether error is a deadline passing rather than the store saying anything. */
export function isMissedDeadline(error: unknown): boolean {
  return (
    error instanceof StoreDeadlineError ||
    (error instanceof Error && error.message === 'Command timed out')
  )
}

export interface StoreFailurePolicy {
  /** The clock calls are timed on (performance.now()). */
  now(): number
  /** `store` answered a call just now (evidence that it is up). */
  answered(store: StoreName): void
  /**
   * What a failed call to `store` that started at `startedAt` (on now())
   * says, once the caller has decided it is not the store refusing the
   * command: `overload` when it is a missed deadline and either the loop
   * lagged for LAG_SHARE of the window since, or the store answered another
   * call since this one started (it is up, only slow: a starved machine, a
   * queue of work); else `outage`.
   */
  judge(error: unknown, startedAt: number, store?: StoreName): 'outage' | 'overload'
  /**
   * judge() for a call known to have missed its deadline (the database's own
   * timeouts), saying which evidence made it overload: the store `answering`
   * others since, or this process `lagging`.
   */
  judgeMissedDeadline(startedAt: number, store: StoreName): 'outage' | 'answering' | 'lagging'
}

export interface StoreFailurePolicyOptions {
  lag?: LagSource
  now?: () => number
  /** LAG_SHARE unless told. */
  lagShare?: number
}

export function createStoreFailurePolicy(
  options: StoreFailurePolicyOptions = {},
): StoreFailurePolicy {
  const lag = options.lag ?? NO_LAG
  const now = options.now ?? (() => performance.now())
  const share = options.lagShare ?? LAG_SHARE
  const lastAnswer = new Map<StoreName, number>()
  const missed = (startedAt: number, store: StoreName | undefined) => {
    const answeredSince = store !== undefined && (lastAnswer.get(store) ?? -Infinity) > startedAt
    if (answeredSince) return 'answering'
    const window = now() - startedAt
    return window > 0 && lag.lagSince(startedAt) >= share * window ? 'lagging' : 'outage'
  }
  return {
    now,
    answered(store) {
      lastAnswer.set(store, now())
    },
    judge: (error, startedAt, store) =>
      isMissedDeadline(error) && missed(startedAt, store) !== 'outage' ? 'overload' : 'outage',
    judgeMissedDeadline: missed,
  }
}
