// How the service copes with a cache that is down, frozen or slow: a decorator
// of any Cache that runs every command through the stores' one deadline and
// circuit breaker (store-breaker.ts), and says what an unavailable cache means.
//
// - Closed (healthy): every command goes to the cache, and fails after
//   timeoutMs at the latest.
// - Any failure that is not the cache refusing a command (WRONGTYPE, ERR) -
//   a timeout, a lost connection, LOADING, READONLY - opens the breaker, and so
//   does the adapter reporting a lost connection (a deadline passed while this
//   process lagged opens nothing: store-failure.ts; that one command answers
//   as below all the same). While open, no command is
//   sent: reads answer as a miss (get → null, listAll → [], ttl → -2), writes
//   and deletes do nothing, so callers run at database speed with no
//   try/catch of their own. ping and incr fail at once (health, counters).
// - In the background the breaker pings the cache every probeIntervalMs; once
//   it answers, the cache is emptied (flush, its `recover`) and only then is
//   the breaker closed. The cache holds only copies (CONTRACT §4.7), so emptying it is
//   always safe, and it is what makes an outage harmless: an invalidation that
//   could not be delivered, a write that timed out, or a server restored from
//   an old snapshot or failed over to a replica that missed writes can never
//   serve a copy older than the database. (Replaying undelivered
//   invalidations would miss the last two, which happen with no failed
//   command at all.)
//
// Not for stores that are not copies: the counter variant's count and the
// turn state must never be flushed, and are not wrapped.
import type { Cache } from './cache.ts'
import {
  type BreakerLink,
  createStoreBreaker,
  isCommandRefusal,
  PROBE_INTERVAL_MS,
  StoreUnavailableError,
} from './store-breaker.ts'
import { type StoreFailurePolicy, StoreOverloadedError } from './store-failure.ts'

export interface ResilientCacheOptions {
  /** Longest one command may take before the cache counts as unavailable (CACHE_TIMEOUT_MS). */
  timeoutMs: number
  /** How often an open breaker asks the cache whether it answers again. */
  probeIntervalMs?: number
  /** Told when the breaker opens (with the failure) and closes again, for logs. */
  onStateChange?: (state: 'open' | 'closed', cause?: unknown) => void
  /** The state's breaker when it is on the same Redis (store-breaker.ts, BreakerLink). */
  breakerLink?: BreakerLink
  /** What a failure says about the cache (store-failure.ts); every failure opens the breaker when absent. */
  failures?: StoreFailurePolicy
}

export interface ResilientCache extends Cache {
  /** True while commands are being sent to the cache. */
  readonly available: boolean
}

export function createResilientCache(inner: Cache, options: ResilientCacheOptions): ResilientCache {
  const breaker = createStoreBreaker({
    store: 'cache',
    timeoutMs: options.timeoutMs,
    probeIntervalMs: options.probeIntervalMs ?? PROBE_INTERVAL_MS,
    probe: () => inner.ping(),
    // The cache holds only copies: emptied before reuse, none can be older than the database.
    recover: () => inner.flush(),
    isRefusal: isCommandRefusal,
    onStateChange: options.onStateChange,
    link: options.breakerLink,
    ...(options.failures ? { failures: options.failures } : {}),
  })

  inner.onConnectionLost?.(() =>
    breaker.trip(new StoreUnavailableError('cache', 'the connection was lost')),
  )

  /** Runs a command unless the breaker is open; an outage answers `whenUnavailable`. */
  async function guarded<T>(run: () => Promise<T>, whenUnavailable: () => T): Promise<T> {
    try {
      return await breaker.run(run)
    } catch (error) {
      if (error instanceof StoreUnavailableError || error instanceof StoreOverloadedError)
        return whenUnavailable()
      throw error
    }
  }

  const unavailable = (): never => {
    throw new StoreUnavailableError('cache')
  }

  return {
    kind: inner.kind,
    get available() {
      return breaker.available
    },
    get: (key) =>
      guarded(
        () => inner.get(key),
        () => null,
      ),
    set: (key, value, ttlSeconds) =>
      guarded(
        () => inner.set(key, value, ttlSeconds),
        () => {},
      ),
    // A fill started while the cache is unavailable carries no token and stores nothing.
    startFill: (key) =>
      guarded(
        () => inner.startFill(key),
        () => '',
      ),
    fill: (key, token, value, ttlSeconds) =>
      token === ''
        ? Promise.resolve(false)
        : guarded(
            () => inner.fill(key, token, value, ttlSeconds),
            () => false,
          ),
    del: (...keys) =>
      guarded(
        () => inner.del(...keys),
        () => 0,
      ),
    incr: (key) => guarded(() => inner.incr(key), unavailable),
    ttl: (key) =>
      guarded(
        () => inner.ttl(key),
        () => -2,
      ),
    listPush: (key, values, maxLength, ttlSeconds) =>
      guarded(
        () => inner.listPush(key, values, maxLength, ttlSeconds),
        () => {},
      ),
    listPushIfPresent: (key, values, maxLength, ttlSeconds) =>
      guarded(
        () => inner.listPushIfPresent(key, values, maxLength, ttlSeconds),
        () => false,
      ),
    listReplace: (key, values, ttlSeconds) =>
      guarded(
        () => inner.listReplace(key, values, ttlSeconds),
        () => {},
      ),
    listAll: (key) =>
      guarded(
        () => inner.listAll(key),
        () => [],
      ),
    // While open there is nothing to do: the probe empties the cache before using it again.
    flush: () =>
      guarded(
        () => inner.flush(),
        () => {},
      ),
    ping: () => guarded(() => inner.ping(), unavailable),
    async close() {
      breaker.close()
      await inner.close()
    },
  }
}
