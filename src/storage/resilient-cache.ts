// The one way the service copes with a cache that is down, frozen or slow: a
// decorator of any Cache with a per-command timeout and a circuit breaker.
//
// - Closed (healthy): every command goes to the cache, and fails after
//   timeoutMs at the latest.
// - Any failure that is not the cache refusing a command (WRONGTYPE, ERR) -
//   a timeout, a lost connection, LOADING, READONLY - opens the breaker, and so
//   does the adapter reporting a lost connection. While open, no command is
//   sent: reads answer as a miss (get → null, listAll → [], ttl → -2), writes
//   and deletes do nothing, so callers run at database speed with no
//   try/catch of their own. ping and incr fail at once (health, counters).
// - In the background a probe pings the cache every probeIntervalMs; once it
//   answers, the probe empties the cache (flush) and only then closes the
//   breaker. The cache holds only copies (CONTRACT §4.7), so emptying it is
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

export interface ResilientCacheOptions {
  /** Longest one command may take before the cache counts as unavailable. */
  timeoutMs: number
  /** How often an open breaker asks the cache whether it answers again. */
  probeIntervalMs: number
  /** Told when the breaker opens (with the failure) and closes again, for logs. */
  onStateChange?: (state: 'open' | 'closed', cause?: unknown) => void
}

/** The cache is not used right now (the breaker is open, or the command timed out). */
export class CacheUnavailableError extends Error {
  constructor(message = 'the cache is unavailable') {
    super(message)
    this.name = 'CacheUnavailableError'
  }
}

/** The cache answered and refused the command: it works, the caller erred. */
export function isCommandRefusal(error: unknown): boolean {
  return error instanceof Error && /^(WRONGTYPE|ERR) /.test(error.message)
}

export interface ResilientCache extends Cache {
  /** True while commands are being sent to the cache. */
  readonly available: boolean
}

export function createResilientCache(inner: Cache, options: ResilientCacheOptions): ResilientCache {
  let open = false
  let closed = false
  let probing: ReturnType<typeof setTimeout> | undefined
  /** Counts failures: a probe that overlapped a new one must not close the breaker. */
  let failures = 0

  function withTimeout<T>(run: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new CacheUnavailableError(`no answer within ${options.timeoutMs} ms`)),
        options.timeoutMs,
      )
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

  function trip(cause: unknown): void {
    if (closed) return
    failures++
    if (!open) {
      open = true
      options.onStateChange?.('open', cause)
    }
    probing ??= setTimeout(probe, options.probeIntervalMs)
  }

  /** Ping, then empty the cache, then let commands through again; else try again later. */
  async function probe(): Promise<void> {
    const seen = failures
    try {
      await withTimeout(() => inner.ping())
      await withTimeout(() => inner.flush())
      if (seen !== failures) throw new CacheUnavailableError('it failed again meanwhile')
      probing = undefined
      if (closed) return
      open = false
      options.onStateChange?.('closed')
    } catch {
      probing = closed ? undefined : setTimeout(probe, options.probeIntervalMs)
    }
  }

  inner.onConnectionLost?.(() => trip(new CacheUnavailableError('the connection was lost')))

  /** Runs a command unless the breaker is open; an outage answers `whenUnavailable`. */
  async function guarded<T>(run: () => Promise<T>, whenUnavailable: () => T): Promise<T> {
    if (open || closed) return whenUnavailable()
    try {
      return await withTimeout(run)
    } catch (error) {
      if (isCommandRefusal(error)) throw error
      trip(error)
      return whenUnavailable()
    }
  }

  const unavailable = (): never => {
    throw new CacheUnavailableError()
  }

  return {
    kind: inner.kind,
    get available() {
      return !open && !closed
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
      closed = true
      clearTimeout(probing)
      probing = undefined
      await inner.close()
    },
  }
}
