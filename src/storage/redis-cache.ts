// Cache adapter for a real Redis (one server, Sentinel or Cluster: see
// redis-connections.ts), through ioredis. Commands fail fast while Redis is
// down (one retry) and reconnects are frequent, so that resilient-cache.ts
// sees an outage at once and its end within a second. Keys live under the
// cache's role prefix (keyspace.ts), and a flush removes those keys
// only (SCAN + UNLINK on every primary): the state, or another application,
// may share the database.

import type { Cache } from './cache.ts'
import { FILL_WINDOW_MS } from './cache.ts'
import { cacheRedisKey, prefixPattern } from './keyspace.ts'
import { isCluster, primariesOf, type RedisConnector, redisConnector } from './redis-connections.ts'
import { redisScript } from './redis-script.ts'
import { bySlot } from './redis-slots.ts'

/**
 * RPUSH + LTRIM + EXPIRE as one script: unlike MULTI, it stops at the first
 * error, so a push onto a key of the wrong type changes nothing.
 */
export const LIST_PUSH = `redis.call('RPUSH', KEYS[1], unpack(ARGV, 3))
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[1]), -1)
redis.call('EXPIRE', KEYS[1], ARGV[2])`

/** LIST_PUSH onto an existing list only (RPUSHX): 0 when the list is absent. */
export const LIST_PUSH_IF_PRESENT = `if redis.call('RPUSHX', KEYS[1], unpack(ARGV, 3)) == 0 then return 0 end
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[1]), -1)
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1`

/**
 * KEYS: the key, its fill marker. ARGV: token, value, ttlSeconds. Sets the
 * key if the marker still holds the token (no del since startFill), and
 * drops the marker: 1 when it set.
 */
export const FILL = `if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
redis.call('DEL', KEYS[2])
return 1`

/** KEYS: the keys, then their fill markers. Deletes all in one step, counts the keys. */
export const DEL_WITH_FILLS = `local half = #KEYS / 2
local deleted = redis.call('DEL', unpack(KEYS, 1, half))
redis.call('DEL', unpack(KEYS, half + 1))
return deleted`

export interface RedisCacheOptions {
  /**
   * The role prefix of every key (REDIS_CACHE_PREFIX); flush() deletes only
   * keys with it. Empty: the whole database is the cache's (FLUSHDB).
   */
  keyPrefix?: string
}

/** SCAN's page size while flushing. */
const FLUSH_SCAN_COUNT = 500

/** A cache on the Redis at `target` (a redis:// URL, or a connector of any deployment). */
export function createRedisCache(
  target: string | RedisConnector,
  options: RedisCacheOptions = {},
): Cache {
  const prefix = options.keyPrefix ?? ''
  const connector = typeof target === 'string' ? redisConnector(target) : target
  const redis = connector.connect({
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 300),
    // A command cut off by a lost connection fails instead of being replayed
    // on the next one, after the cache was emptied (see resilient-cache.ts).
    // (ioredis leaves such a command pending instead: unfulfilled-on-drop.ts.)
    autoResendUnfulfilledCommands: false,
    // The commands of one loop turn (a request's reads, a turn's writes) go
    // out in one socket write.
    enableAutoPipelining: true,
  })
  // Connection errors surface on the commands; without a listener ioredis logs each one.
  redis.on('error', () => {})
  const k = (key: string) => cacheRedisKey(prefix, key)
  /** The key that marks `key` as being filled: in its slot, as it carries its hash tag. */
  const marker = (key: string) => `${k(key)}:fill`
  const listPush = redisScript(LIST_PUSH)
  const listPushIfPresent = redisScript(LIST_PUSH_IF_PRESENT)
  const fill = redisScript(FILL)
  const delWithFills = redisScript(DEL_WITH_FILLS)

  /** SCAN + UNLINK of the prefix's keys on every primary, one key per UNLINK (they may lie in many slots). */
  async function flushPrefixed() {
    for (const node of primariesOf(redis)) {
      let cursor = '0'
      do {
        const [next, keys] = await node.scan(
          cursor,
          'MATCH',
          prefixPattern(prefix),
          'COUNT',
          FLUSH_SCAN_COUNT,
        )
        if (keys.length > 0) {
          const pipeline = node.pipeline()
          for (const key of keys) pipeline.unlink(key)
          await pipeline.exec().then(throwOnFailedCommand)
        }
        cursor = next
      } while (cursor !== '0')
    }
  }

  return {
    kind: 'redis',
    get: (key) => redis.get(k(key)),
    async set(key, value, ttlSeconds) {
      if (ttlSeconds === undefined) await redis.set(k(key), value)
      else await redis.set(k(key), value, 'EX', ttlSeconds)
    },
    async del(...keys) {
      // One step per slot, so no fill can land between a key and its marker.
      const counts = await Promise.all(
        bySlot(redis, keys, k).map(async (group) =>
          Number(await delWithFills.run(redis, [...group.map(k), ...group.map(marker)], [])),
        ),
      )
      return counts.reduce((sum, count) => sum + count, 0)
    },
    async startFill(key) {
      const token = crypto.randomUUID()
      await redis.set(marker(key), token, 'PX', FILL_WINDOW_MS)
      return token
    },
    async fill(key, token, value, ttlSeconds) {
      const set = await fill.run(redis, [k(key), marker(key)], [token, value, ttlSeconds])
      return set === 1
    },
    incr: (key) => redis.incr(k(key)),
    ttl: (key) => redis.ttl(k(key)),
    async listPush(key, values, maxLength, ttlSeconds) {
      if (values.length === 0) return
      await listPush.run(redis, [k(key)], [maxLength, ttlSeconds, ...values])
    },
    async listPushIfPresent(key, values, maxLength, ttlSeconds) {
      if (values.length === 0) return false
      const pushed = await listPushIfPresent.run(
        redis,
        [k(key)],
        [maxLength, ttlSeconds, ...values],
      )
      return pushed === 1
    },
    async listReplace(key, values, ttlSeconds) {
      const tx = redis.multi().del(k(key))
      if (values.length > 0) tx.rpush(k(key), ...values).expire(k(key), ttlSeconds)
      await tx.exec().then(throwOnFailedCommand)
    },
    listAll: (key) => redis.lrange(k(key), 0, -1),
    async flush() {
      if (prefix !== '') await flushPrefixed()
      else for (const node of primariesOf(redis)) await node.flushdb()
    },
    async ping() {
      await redis.ping()
    },
    onConnectionLost(listener) {
      redis.on('close', listener)
      // A Cluster client stays up while one of its nodes goes (a failover).
      if (isCluster(redis)) redis.on('-node', listener)
    },
    async close() {
      redis.disconnect()
    },
  }
}

/** MULTI replies carry per-command errors instead of throwing them. */
function throwOnFailedCommand(results: [Error | null, unknown][] | null) {
  if (results === null) throw new Error('Redis transaction was aborted')
  for (const [error] of results) if (error) throw error
}
