// The one policy for a Redis that is slow or gone, whatever it holds: the
// cache (resilient-cache.ts), the turn state (state.ts) and the rate limits'
// counts (redis-rate-limiter.ts). Every call on a request's path has a
// deadline, and once a store missed one, nothing on a request's path asks it
// again until it answers:
//
// - Closed (healthy): every command goes to the store, and fails after its
//   deadline at the latest with a StoreUnavailableError.
// - Any failure that is not the store refusing the command (WRONGTYPE, ERR) -
//   a missed deadline, a lost connection, LOADING, READONLY - opens the
//   breaker, and so does trip() (an adapter reporting a lost connection);
//   but a deadline that passed while this process's own event loop lagged
//   opens nothing and fails as overloaded (store-failure.ts decides). While
//   open, run() fails at once: the caller decides in the process what an
//   unavailable store means (the cache: a miss; the requests limit: count
//   locally; a send: 503), and nobody waits for a frozen server.
// - In the background a probe asks the store every probeIntervalMs; once it
//   answers (and `recover` ran: the cache is emptied first), the breaker
//   closes. A failure while the probe ran makes it try again later.
//
// A cache and a state on one Redis deployment (the default: REDIS_URL only,
// told apart by key prefix) share that server's fate: their breakers are
// linked (BreakerLink), so a deadline missed by either opens both, and each
// closes again by its own probe. A read then pays one deadline, not one per
// store. A lost connection opens only its own client's breaker (trip()): each
// client hears of its own, and a Cluster client loses one node's - a killed
// master, a replica, a connection ioredis replaced - while the state's
// commands to the other nodes go on (issue #29: a node the cache's client
// dropped after a Cluster failover refused every send for 200 ms).
//
// The deadlines themselves: an optional check (the cache's copies, the
// requests limit's count) gets CACHE_TIMEOUT_MS, 500 ms by default; state a
// request cannot do without (turn logs, leases, the sends limit) gets
// STATE_DEADLINE_MS. So a read waits at most about one short deadline per
// store, and a send is answered, or refused with 503, within about 2 s.

import {
  createStoreFailurePolicy,
  StoreDeadlineError,
  type StoreFailurePolicy,
  type StoreName,
  StoreOverloadedError,
  StoreUnavailableError,
} from './store-failure.ts'

export { type StoreName, StoreUnavailableError } from './store-failure.ts'

/** Deadline of a state command (logs, leases, the sends limit): generous, since they are not optional. */
export const STATE_DEADLINE_MS = 2_000
/** How often an open breaker asks its store whether it answers again. */
export const PROBE_INTERVAL_MS = 200

/** The store answered and refused the command: it works, the caller erred. */
export function isCommandRefusal(error: unknown): boolean {
  return error instanceof Error && /^(WRONGTYPE|ERR) /.test(error.message)
}

/** run(), failing with a StoreUnavailableError after ms if it has not settled by then. */
export function withDeadline<T>(run: () => Promise<T>, ms: number, store: StoreName): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new StoreDeadlineError(store, ms)), ms)
    run().then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}

export interface StoreBreakerOptions {
  store: StoreName
  /** Longest one command may take before the store counts as unavailable. */
  timeoutMs: number
  /** How often an open breaker probes the store (PROBE_INTERVAL_MS). */
  probeIntervalMs?: number
  /** Resolves when the store answers (a PING); each try has the deadline. */
  probe: () => Promise<unknown>
  /** Runs after a probe answered and before commands go through again (the cache: empty it). */
  recover?: () => Promise<unknown>
  /** The store answered and refused: the caller's error, not an outage (isCommandRefusal). */
  isRefusal?: (error: unknown) => boolean
  /** Told when the breaker opens (with the failure) and closes again, for logs. */
  onStateChange?: (state: 'open' | 'closed', cause?: unknown) => void
  /** The breakers of other stores on the same Redis: opening one opens them all. */
  link?: BreakerLink
  /**
   * What a failure says about the store (store-failure.ts): a deadline passed
   * while this process lagged opens nothing. Without it every failure does.
   */
  failures?: StoreFailurePolicy
}

export interface StoreBreaker {
  readonly store: StoreName
  /** True while commands are sent to the store. */
  readonly available: boolean
  /**
   * Runs a command with the deadline (timeoutMs, or the breaker's own), unless
   * the breaker is open: then, or when it fails as an outage, it rejects with a
   * StoreUnavailableError and the breaker is (or stays) open. A refusal is
   * passed on as it is; a deadline passed while this process lagged rejects
   * with a StoreOverloadedError and opens nothing.
   */
  run<T>(command: () => Promise<T>, timeoutMs?: number): Promise<T>
  /** The clock `failed` takes a call's start on. */
  now(): number
  /** A call made outside run() was answered (the state's ports, state-gate.ts). */
  answered(): void
  /**
   * A call that started at `startedAt` (on now()) failed as an outage would,
   * seen outside run() (the state's ports, state-gate.ts): opens the breaker
   * unless the failure policy says this process lagged; answers what to throw
   * (the error itself, or a StoreOverloadedError).
   */
  failed(error: unknown, startedAt: number): unknown
  /**
   * Opens this breaker only (its client lost a connection, or a linked store
   * missed a deadline): a client's lost connection says nothing of another
   * client's, and on a Cluster it may be one node's, even a replica's.
   */
  trip(cause: unknown): void
  /** Stops probing; from now on run() always fails. */
  close(): void
}

export function createStoreBreaker(options: StoreBreakerOptions): StoreBreaker {
  const { store, timeoutMs } = options
  const probeIntervalMs = options.probeIntervalMs ?? PROBE_INTERVAL_MS
  const isRefusal = options.isRefusal ?? isCommandRefusal
  // Without one given, a policy of its own: no lag measured, its store's answers its only evidence.
  const failurePolicy = options.failures ?? createStoreFailurePolicy()
  let open = false
  let closed = false
  let probing: ReturnType<typeof setTimeout> | undefined
  /** Counts failures: a probe that overlapped a new one must not close the breaker. */
  let failures = 0

  /** Opens this breaker; an outage of the server (`linked`) opens the breakers linked to it too. */
  function openOn(cause: unknown, linked: boolean): void {
    if (closed) return
    failures++
    probing ??= setTimeout(probe, probeIntervalMs)
    if (open) return
    open = true
    options.onStateChange?.('open', cause)
    if (linked) options.link?.opened(breaker, cause)
  }

  /** Ask, recover, then let commands through again; else try again later. */
  async function probe(): Promise<void> {
    const seen = failures
    try {
      await withDeadline(options.probe, timeoutMs, store)
      if (options.recover) await withDeadline(options.recover, timeoutMs, store)
      if (seen !== failures) throw new StoreUnavailableError(store, 'it failed again meanwhile')
      probing = undefined
      if (closed) return
      open = false
      options.onStateChange?.('closed')
    } catch {
      probing = closed ? undefined : setTimeout(probe, probeIntervalMs)
    }
  }

  const breaker: StoreBreaker = {
    store,
    get available() {
      return !open && !closed
    },
    async run(command, ms = timeoutMs) {
      if (open || closed) throw new StoreUnavailableError(store)
      const startedAt = failurePolicy.now()
      try {
        const result = await withDeadline(command, ms, store)
        failurePolicy.answered(store)
        return result
      } catch (error) {
        if (isRefusal(error)) throw error
        const thrown = breaker.failed(error, startedAt)
        if (thrown instanceof StoreOverloadedError) throw thrown
        throw error instanceof StoreUnavailableError
          ? error
          : new StoreUnavailableError(store, `the ${store} store failed: ${messageOf(error)}`)
      }
    },
    now: failurePolicy.now,
    answered: () => failurePolicy.answered(store),
    failed(error, startedAt) {
      if (failurePolicy.judge(error, startedAt, store) === 'overload')
        return new StoreOverloadedError(store, error)
      openOn(error, true)
      return error
    },
    trip: (cause) => openOn(cause, false),
    close() {
      closed = true
      clearTimeout(probing)
      probing = undefined
      options.link?.leave(breaker)
    },
  }
  options.link?.join(breaker)
  return breaker
}

/** Breakers of stores that live on one Redis deployment (createBreakerLink). */
export interface BreakerLink {
  join(breaker: StoreBreaker): void
  leave(breaker: StoreBreaker): void
  /** `by` just opened: opens every other breaker of the link. */
  opened(by: StoreBreaker, cause: unknown): void
}

/**
 * Links the breakers of stores on one Redis deployment: a frozen or dead
 * server fails them all, so the first store to miss a deadline opens the
 * others instead of letting each request wait out theirs too. Each then
 * closes by its own probe (the cache, only once emptied).
 */
export function createBreakerLink(): BreakerLink {
  const members = new Set<StoreBreaker>()
  return {
    join: (breaker) => void members.add(breaker),
    leave: (breaker) => void members.delete(breaker),
    opened(by, cause) {
      for (const breaker of members)
        if (breaker !== by)
          breaker.trip(
            new StoreUnavailableError(
              breaker.store,
              `the ${by.store} store on the same Redis is unavailable: ${messageOf(cause)}`,
            ),
          )
    },
  }
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error))
