// RateLimiter adapter shared by every instance: the counts live in Redis (one
// key per user and window, incremented and given its expiry by one Lua call,
// rate-limiter-flexible's RateLimiterRedis). It uses the state database, not
// the cache: `DELETE /cache` must not hand every user a fresh window. While
// Redis does not answer, each process counts on its own in memory (the
// library's insurance limiter), so a Redis outage neither blocks every
// request nor lifts the limit.
import { RateLimiterRedis } from 'rate-limiter-flexible'
import { rateLimitKey, rateLimitPrefix } from '../state/keyspace.ts'
import type { RedisClient } from '../storage/redis-connections.ts'
import { memoryLimiterOf } from './memory-rate-limiter.ts'
import { flexibleRateLimiter, type RateLimiter, type RateLimitPolicy } from './rate-limiter.ts'
import { reservingRateLimiter } from './reserving-rate-limiter.ts'

export interface RedisRateLimiterOptions {
  /**
   * A client made with `enableOfflineQueue: false`, so a call while Redis is
   * down fails at once and the in-memory fallback answers.
   */
  redis: RedisClient
  /** The state's role prefix (REDIS_STATE_PREFIX; tests use a random one). */
  keyPrefix?: string
  /**
   * Take points from Redis in blocks and spend them in the process
   * (reserving-rate-limiter.ts): a round trip every few requests instead of
   * each, never more than the limit in all, but one instance may refuse
   * early while another holds unspent points. For a loose limit.
   */
  reserveBlocks?: boolean
}

export function createRedisRateLimiter(
  policy: RateLimitPolicy,
  { redis, keyPrefix = '', reserveBlocks = false }: RedisRateLimiterOptions,
): RateLimiter {
  const store = new RateLimiterRedis({
    storeClient: redis,
    points: policy.points,
    duration: policy.windowSeconds,
    keyPrefix: rateLimitPrefix(keyPrefix, policy.name),
    rejectIfRedisNotReady: true,
    insuranceLimiter: memoryLimiterOf(policy),
  })
  // The user's id as the key's hash tag (keyspace.ts).
  const tagged = {
    consume: (key: string, points?: number) => store.consume(rateLimitKey(key), points),
  }
  return reserveBlocks ? reservingRateLimiter(tagged) : flexibleRateLimiter(tagged)
}
