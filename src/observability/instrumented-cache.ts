// A Cache decorator that counts reads as hits or misses per key kind for
// /metrics. The kind is the key without its ids (`conv:{id}:history` ->
// `conv:history`), so the label set stays small whatever the traffic.
import type { Cache } from '../storage/cache.ts'
import type { Metrics } from './metrics.ts'

/**
 * `a:{id}:b` -> `a:b` (ids may hold colons), `doc:{hash}` -> `doc`, and a key
 * with no id (`documents:list`, `counter:visits`) as it is.
 */
export function keyKind(key: string): string {
  const first = key.indexOf(':')
  if (first === -1) return key
  const last = key.lastIndexOf(':')
  if (last !== first) return key.slice(0, first) + key.slice(last)
  return /^[0-9a-f-]{16,}$/i.test(key.slice(first + 1)) ? key.slice(0, first) : key
}

export function instrumentedCache(cache: Cache, metrics: Pick<Metrics, 'cacheLookups'>): Cache {
  const count = (key: string, hit: boolean) => metrics.cacheLookups.count(keyKind(key), hit)
  return {
    ...bind(cache),
    kind: cache.kind,
    async get(key) {
      const value = await cache.get(key)
      count(key, value !== null)
      return value
    },
    async listAll(key) {
      const values = await cache.listAll(key)
      count(key, values.length > 0)
      return values
    },
  }
}

/** The cache's methods bound to it, so the decorator can hand them on unchanged. */
function bind(cache: Cache): Omit<Cache, 'kind'> {
  return {
    get: (key) => cache.get(key),
    set: (key, value, ttl) => cache.set(key, value, ttl),
    startFill: (key) => cache.startFill(key),
    fill: (key, token, value, ttl) => cache.fill(key, token, value, ttl),
    del: (...keys) => cache.del(...keys),
    incr: (key) => cache.incr(key),
    ttl: (key) => cache.ttl(key),
    listPush: (key, values, max, ttl) => cache.listPush(key, values, max, ttl),
    listPushIfPresent: (key, values, max, ttl) => cache.listPushIfPresent(key, values, max, ttl),
    listReplace: (key, values, ttl) => cache.listReplace(key, values, ttl),
    listAll: (key) => cache.listAll(key),
    flush: () => cache.flush(),
    ping: () => cache.ping(),
    close: () => cache.close(),
  }
}
