// Cache adapter for a real Redis server, through ioredis. Commands fail fast
// while Redis is down (one retry) and reconnects are frequent, so that
// resilient-cache.ts sees an outage at once and its end within a second.
import Redis from 'ioredis'
import { type Cache, FILL_WINDOW_MS, fillKey } from './cache.ts'
import { redisScript } from './redis-script.ts'
import { coalesceWritesPerLoopTurn } from './redis-write-coalescing.ts'

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
  /** Prepended to every key; flush() then deletes only keys with it (tests). */
  keyPrefix?: string
}

export function createRedisCache(url: string, options: RedisCacheOptions = {}): Cache {
  const prefix = options.keyPrefix ?? ''
  const redis = new Redis(url, {
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    retryStrategy: (attempt) => Math.min(attempt * 100, 300),
    // A command cut off by a lost connection fails instead of being replayed
    // on the next one, after the cache was emptied (see resilient-cache.ts).
    autoResendUnfulfilledCommands: false,
  })
  // Connection errors surface on the commands; without a listener ioredis logs each one.
  redis.on('error', () => {})
  coalesceWritesPerLoopTurn(redis)
  const k = (key: string) => prefix + key
  const listPush = redisScript(LIST_PUSH)
  const listPushIfPresent = redisScript(LIST_PUSH_IF_PRESENT)
  const fill = redisScript(FILL)
  const delWithFills = redisScript(DEL_WITH_FILLS)

  async function flushPrefixed() {
    let cursor = '0'
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500)
      if (keys.length > 0) await redis.unlink(...keys)
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
      const markers = keys.map((key) => k(fillKey(key)))
      return Number(await delWithFills.run(redis, [...keys.map(k), ...markers], []))
    },
    async startFill(key) {
      const token = crypto.randomUUID()
      await redis.set(k(fillKey(key)), token, 'PX', FILL_WINDOW_MS)
      return token
    },
    async fill(key, token, value, ttlSeconds) {
      const set = await fill.run(redis, [k(key), k(fillKey(key))], [token, value, ttlSeconds])
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
      if (prefix === '') await redis.flushdb()
      else await flushPrefixed()
    },
    async ping() {
      await redis.ping()
    },
    onConnectionLost(listener) {
      redis.on('close', listener)
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
