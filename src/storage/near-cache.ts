// A coherent near cache: a Cache decorator that keeps copies of chosen keys in
// process memory (LRU, bounded in bytes) in front of the shared cache, so a hit
// costs no network round trip. It stays coherent through an invalidation feed
// (redis-invalidations.ts: Redis CLIENT TRACKING), which reports every change
// to those keys by anyone; while the feed is down it keeps and serves nothing.
// A copy never outlives the key's expiry in the shared cache. A write of a near
// key resolves only once its change has been reported back through the feed
// (feed.sync()), i.e. after Redis has sent the invalidation to every instance:
// when the writer answers its client, no instance serves the old copy.
//
// The decorator only assumes the Cache port of what it wraps, so it composes
// with other decorators (e.g. timeouts and a circuit breaker) put around the
// Redis adapter: near hits then never reach them.
import { LRUCache } from 'lru-cache'
import type { Cache } from './cache.ts'

/** What a near cache is told about changes in the shared cache. */
export interface InvalidationListener {
  /** From now on every change is reported (after a start or a reconnect). */
  connected(): void
  /** Changes may go unreported until connected() again. */
  disconnected(): void
  /** These keys changed, were deleted or expired. */
  changed(keys: readonly string[]): void
  /** Every key may have changed (FLUSHDB, FLUSHALL). */
  flushed(): void
}

/** A source of change reports about the shared cache. */
export interface InvalidationFeed {
  /** Starts reporting to listener; says connected() at once if it already is. */
  listen(listener: InvalidationListener): void
  /**
   * Resolves once every change made before the call has been reported to the
   * listener, and so has reached every other feed on the same server too.
   */
  sync(): Promise<void>
  close(): Promise<void>
}

export interface NearCacheOptions {
  /** Upper bound of the memory the copies take (keys and values, as UTF-16). */
  maxBytes: number
  /** Which keys are kept near; every other key always goes to the shared cache. */
  isNear: (key: string) => boolean
  now?: () => number
}

interface Entry {
  value: string
  /** Epoch ms after which the copy is not served; Infinity for a key without expiry. */
  expiresAt: number
}

/** Rough bookkeeping cost of one entry beyond its strings. */
const ENTRY_OVERHEAD_BYTES = 96
/** Redis rounds TTL to the nearest second: a copy expires this much earlier to stay safe. */
const TTL_ROUNDING_MS = 500
/** No single value may take more than this share of the whole bound. */
const MAX_ENTRY_SHARE = 8

export function createNearCache(
  shared: Cache,
  feed: InvalidationFeed,
  options: NearCacheOptions,
): Cache {
  const now = options.now ?? Date.now
  const { isNear } = options
  const copies = new LRUCache<string, Entry>({
    maxSize: options.maxBytes,
    maxEntrySize: Math.max(1, Math.floor(options.maxBytes / MAX_ENTRY_SHARE)),
    sizeCalculation: (entry, key) => (key.length + entry.value.length) * 2 + ENTRY_OVERHEAD_BYTES,
  })
  /**
   * Reads of near keys in flight, by key: the token of the latest. Any change
   * removes the key here, so a value read before the change is not kept.
   */
  const filling = new Map<string, number>()
  let lastToken = 0
  /** The feed is connected: every change reaches us. */
  let live = false

  const forget = (key: string) => {
    copies.delete(key)
    filling.delete(key)
  }
  const forgetAll = () => {
    copies.clear()
    filling.clear()
  }

  feed.listen({
    connected() {
      forgetAll()
      live = true
    },
    disconnected() {
      live = false
      forgetAll()
    },
    changed(keys) {
      for (const key of keys) forget(key)
    },
    flushed: forgetAll,
  })

  /** Reads key from the shared cache and keeps the copy unless something changed meanwhile. */
  async function fill(key: string): Promise<string | null> {
    const token = ++lastToken
    filling.set(key, token)
    const sentAt = now()
    try {
      const ttl = shared.ttl(key).catch(() => -2)
      const value = await shared.get(key)
      const seconds = await ttl
      if (value !== null && seconds !== -2 && live && filling.get(key) === token) {
        const expiresAt =
          seconds === -1 ? Number.POSITIVE_INFINITY : sentAt + seconds * 1000 - TTL_ROUNDING_MS
        if (expiresAt > now()) copies.set(key, { value, expiresAt })
      }
      return value
    } finally {
      if (filling.get(key) === token) filling.delete(key)
    }
  }

  /**
   * Waits until the change just made has been reported to every instance, so
   * that once the write's caller answers, no other instance serves the old copy.
   */
  async function reported(): Promise<void> {
    if (live) await feed.sync().catch(() => {})
  }

  /** Runs a write, forgetting the near keys it touches before and after it. */
  async function writing<T>(keys: readonly string[], write: () => Promise<T>): Promise<T> {
    const near = keys.filter(isNear)
    if (near.length === 0) return write()
    for (const key of near) forget(key)
    try {
      const result = await write()
      await reported()
      return result
    } finally {
      for (const key of near) forget(key)
    }
  }

  return {
    kind: shared.kind,
    async get(key) {
      if (!isNear(key)) return shared.get(key)
      if (live) {
        const copy = copies.get(key)
        if (copy !== undefined) {
          if (copy.expiresAt > now()) return copy.value
          copies.delete(key)
        }
      }
      return fill(key)
    },
    set: (key, value, ttlSeconds) => writing([key], () => shared.set(key, value, ttlSeconds)),
    startFill: (key) => shared.startFill(key),
    fill: (key, token, value, ttlSeconds) =>
      writing([key], () => shared.fill(key, token, value, ttlSeconds)),
    del: (...keys) => writing(keys, () => shared.del(...keys)),
    incr: (key) => writing([key], () => shared.incr(key)),
    ttl: (key) => shared.ttl(key),
    listPush: (key, values, maxLength, ttlSeconds) =>
      writing([key], () => shared.listPush(key, values, maxLength, ttlSeconds)),
    listPushIfPresent: (key, values, maxLength, ttlSeconds) =>
      writing([key], () => shared.listPushIfPresent(key, values, maxLength, ttlSeconds)),
    listReplace: (key, values, ttlSeconds) =>
      writing([key], () => shared.listReplace(key, values, ttlSeconds)),
    listAll: (key) => shared.listAll(key),
    async flush() {
      forgetAll()
      try {
        await shared.flush()
        await reported()
      } finally {
        forgetAll()
      }
    },
    ping: () => shared.ping(),
    async close() {
      live = false
      forgetAll()
      await feed.close()
      await shared.close()
    },
  }
}
