// The Redis client comparison's Cache adapter through Bun's built-in client
// (Bun.RedisClient), with the semantics of src/storage/redis-cache.ts, for
// bench/clients/compare.ts only. Not an adapter of the service (measured with
// Bun 1.4.5, see docs/benchmarks.md, "Smaller tools"): its GETs are faster
// than ioredis's, but once Redis restarts the client fails every command
// until the process restarts, and it delivers no CLIENT TRACKING
// invalidations. It passed the Cache contract suite while it lived in
// src/storage; the suite runs the service's adapters only.
import { RedisClient } from 'bun'
import { type Cache, FILL_WINDOW_MS, fillKey } from '../../src/storage/cache.ts'
import {
  DEL_WITH_FILLS,
  FILL,
  LIST_PUSH,
  LIST_PUSH_IF_PRESENT,
  type RedisCacheOptions,
} from '../../src/storage/redis-cache.ts'

/** DEL + RPUSH + EXPIRE as one step. */
const LIST_REPLACE = `redis.call('DEL', KEYS[1])
if #ARGV > 1 then
  redis.call('RPUSH', KEYS[1], unpack(ARGV, 2))
  redis.call('EXPIRE', KEYS[1], ARGV[1])
end`

export function createBunRedisCache(url: string, options: RedisCacheOptions = {}): Cache {
  const prefix = options.keyPrefix ?? ''
  const redis = new RedisClient(url, { connectionTimeout: 2_000, maxRetries: 1 })
  const k = (key: string) => prefix + key

  async function flushPrefixed() {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
      if (keys.length > 0) await redis.send('UNLINK', keys)
      cursor = next
    } while (cursor !== '0')
  }

  return {
    kind: 'redis',
    get: (key) => redis.get(k(key)),
    async set(key, value, ttlSeconds) {
      if (ttlSeconds === undefined) await redis.set(k(key), value)
      else await redis.set(k(key), value, 'EX', ttlSeconds)
    },
    async del(...keys) {
      if (keys.length === 0) return 0
      // One step, so no fill can land between the keys and their markers.
      const deleted = await redis.send('EVAL', [
        DEL_WITH_FILLS,
        String(keys.length * 2),
        ...keys.map(k),
        ...keys.map((key) => k(fillKey(key))),
      ])
      return Number(deleted)
    },
    async startFill(key) {
      const token = crypto.randomUUID()
      await redis.send('SET', [k(fillKey(key)), token, 'PX', String(FILL_WINDOW_MS)])
      return token
    },
    async fill(key, token, value, ttlSeconds) {
      const set = await redis.send('EVAL', [
        FILL,
        '2',
        k(key),
        k(fillKey(key)),
        token,
        value,
        String(ttlSeconds),
      ])
      return Number(set) === 1
    },
    incr: (key) => redis.incr(k(key)),
    ttl: (key) => redis.ttl(k(key)),
    async listPush(key, values, maxLength, ttlSeconds) {
      if (values.length === 0) return
      await redis.send('EVAL', [
        LIST_PUSH,
        '1',
        k(key),
        String(maxLength),
        String(ttlSeconds),
        ...values,
      ])
    },
    async listPushIfPresent(key, values, maxLength, ttlSeconds) {
      if (values.length === 0) return false
      const pushed = await redis.send('EVAL', [
        LIST_PUSH_IF_PRESENT,
        '1',
        k(key),
        String(maxLength),
        String(ttlSeconds),
        ...values,
      ])
      return pushed === 1
    },
    async listReplace(key, values, ttlSeconds) {
      await redis.send('EVAL', [LIST_REPLACE, '1', k(key), String(ttlSeconds), ...values])
    },
    listAll: (key) => redis.lrange(k(key), 0, -1),
    async flush() {
      if (prefix === '') await redis.send('FLUSHDB', [])
      else await flushPrefixed()
    },
    async ping() {
      await redis.send('PING', [])
    },
    async close() {
      redis.close()
    },
  }
}
