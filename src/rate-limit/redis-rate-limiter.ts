// RateLimiter adapter shared by every instance: the counts live in Redis (one
// key per user and window, incremented and given its expiry by one Lua call,
// rate-limiter-flexible's RateLimiterRedis). It uses the state database, not
// the cache: `DELETE /cache` must not hand every user a fresh window.
//
// Every count goes through the state's breaker (store-breaker.ts) with a
// deadline, so a frozen or dead Redis never holds a request longer than that
// deadline, and once one count missed it nobody waits for Redis until the
// breaker's probe hears it again. What the limiter decides meanwhile, in the
// process, is its `whenUnavailable`: `count-locally` counts each process's
// requests in memory (a bounded local allowance: the limit per process), so
// reads go on; `refuse` throws the breaker's StoreUnavailableError (a 503),
// for sends, which cannot run without the turn state on that Redis anyway.
import { RateLimiterRedis, RateLimiterRes } from 'rate-limiter-flexible'
import { rateLimitKey, rateLimitPrefix } from '../storage/keyspace.ts'
import type { RedisClient } from '../storage/redis-connections.ts'
import { type StoreBreaker, StoreUnavailableError } from '../storage/store-breaker.ts'
import { StoreOverloadedError } from '../storage/store-failure.ts'
import { memoryLimiterOf } from './memory-rate-limiter.ts'
import {
  type FlexibleLimiter,
  flexibleRateLimiter,
  type RateLimiter,
  type RateLimitPolicy,
} from './rate-limiter.ts'
import { reservingRateLimiter } from './reserving-rate-limiter.ts'

export interface RedisRateLimiterOptions {
  /**
   * A client made with `enableOfflineQueue: false`, so a call while Redis is
   * down fails at once instead of waiting for a reconnect.
   */
  redis: RedisClient
  /** The state Redis's breaker (State.breaker): shared with the state and the other limit. */
  breaker: StoreBreaker
  /** Longest one count may wait for Redis; the breaker's own deadline unless told. */
  timeoutMs?: number
  /** What an unavailable Redis means: count in this process, or refuse (503). */
  whenUnavailable: 'count-locally' | 'refuse'
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

type Counted = { counted: RateLimiterRes } | { refused: RateLimiterRes }

export function createRedisRateLimiter(
  policy: RateLimitPolicy,
  options: RedisRateLimiterOptions,
): RateLimiter {
  const { breaker, timeoutMs, whenUnavailable } = options
  const shared = new RateLimiterRedis({
    storeClient: options.redis,
    points: policy.points,
    duration: policy.windowSeconds,
    keyPrefix: rateLimitPrefix(options.keyPrefix ?? '', policy.name),
    rejectIfRedisNotReady: true,
  })
  const local = memoryLimiterOf(policy)

  /** One count in Redis; a refusal past the limit is an answer, not a failure of the store. */
  const count = (key: string, points: number): Promise<Counted> =>
    // The user's id as the key's hash tag (storage/keyspace.ts).
    shared.consume(rateLimitKey(key), points).then(
      (counted) => ({ counted }),
      (rejection: unknown) =>
        rejection instanceof RateLimiterRes ? { refused: rejection } : Promise.reject(rejection),
    )

  const store: FlexibleLimiter = {
    async consume(key, points = 1) {
      let outcome: Counted
      try {
        outcome = await breaker.run(() => count(key, points), timeoutMs)
      } catch (error) {
        // The store failed (the breaker is open now) or refused the script: decide here.
        // Refused as what it was: the store unavailable, or this process too busy to hear it.
        if (whenUnavailable === 'refuse')
          throw error instanceof StoreUnavailableError || error instanceof StoreOverloadedError
            ? error
            : new StoreUnavailableError(breaker.store)
        return local.consume(key, points)
      }
      if ('refused' in outcome) throw outcome.refused
      return outcome.counted
    },
  }
  return options.reserveBlocks ? reservingRateLimiter(store) : flexibleRateLimiter(store)
}
