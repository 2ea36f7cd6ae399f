// The Cache port: the small set of key-value and list operations the service
// needs. Adapters with identical semantics: redis-cache.ts (ioredis) and
// memory-cache.ts (in-process). The cache only ever holds copies. The service
// uses a cache through resilient-cache.ts, which decides what a failure means.

/** How long a fill may take from startFill; a slower one is dropped. */
export const FILL_WINDOW_MS = 10_000

/** The key that marks `key` as being filled (adapters of a server). */
export const fillKey = (key: string) => `${key}:fill`

export interface Cache {
  /** `redis` for a real server, `memory` for the in-process cache. */
  readonly kind: 'redis' | 'memory'
  get(key: string): Promise<string | null>
  /** Sets the value; with ttlSeconds the key expires after that many seconds. */
  set(key: string, value: string, ttlSeconds?: number): Promise<void>
  /** Deletes the keys, and voids any fill of them in progress; returns how many existed. */
  del(...keys: string[]): Promise<number>
  /**
   * Cache-aside without the stale store: called before reading what `key`
   * copies from the source of truth, it returns a token for fill. A del of the
   * key from now on (by anyone), or FILL_WINDOW_MS passing, voids the token,
   * so a copy read before a change is never stored after the change's
   * invalidation.
   */
  startFill(key: string): Promise<string>
  /** Sets key to value, expiring after ttlSeconds, if token is not void; true when it did. */
  fill(key: string, token: string, value: string, ttlSeconds: number): Promise<boolean>
  /** Increments an integer value (absent = 0) and returns the new value. */
  incr(key: string): Promise<number>
  /** Seconds until the key expires; -1 without expiry, -2 when absent. */
  ttl(key: string): Promise<number>
  /**
   * Appends values to the list at key, keeps only the last maxLength entries and
   * sets the expiry, as one atomic step.
   */
  listPush(
    key: string,
    values: readonly string[],
    maxLength: number,
    ttlSeconds: number,
  ): Promise<void>
  /**
   * listPush onto a list that exists, as one atomic step; resolves false, and
   * changes nothing, when the list is absent (or there is nothing to push).
   */
  listPushIfPresent(
    key: string,
    values: readonly string[],
    maxLength: number,
    ttlSeconds: number,
  ): Promise<boolean>
  /** Replaces the whole list at key with values and sets the expiry, atomically. */
  listReplace(key: string, values: readonly string[], ttlSeconds: number): Promise<void>
  /** The whole list at key, oldest first; empty when absent. */
  listAll(key: string): Promise<string[]>
  /** Deletes every key this cache holds (on Redis: those under its prefix), and no other. */
  flush(): Promise<void>
  /** Resolves when the cache answers; throws otherwise. */
  ping(): Promise<void>
  /**
   * Adapters of a server only: calls listener whenever the connection to it
   * was lost. What the server holds afterwards is unknown: it may have
   * restarted from an old snapshot, or failed over to a replica that missed
   * writes. (resilient-cache.ts empties the cache before using it again.)
   */
  onConnectionLost?(listener: () => void): void
  close(): Promise<void>
}
