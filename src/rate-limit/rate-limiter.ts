// The RateLimiter port: counts requests per key (a user) in fixed windows and
// says whether one more is allowed, and if not, when to come back. Adapters:
// memory-rate-limiter.ts (one process) and redis-rate-limiter.ts (shared by
// every instance; exact per request, or spending points reserved in blocks,
// reserving-rate-limiter.ts). All count with rate-limiter-flexible's
// limiters, which are made for exactly this; this module turns their answers
// into a RateLimitDecision.
import { RateLimiterRes } from 'rate-limiter-flexible'

export type RateLimitDecision =
  | { allowed: true; remaining: number }
  | { allowed: false; retryAfterMs: number }

export interface RateLimiter {
  /** Counts one request for key; allowed while the window has counted at most `points`. */
  consume(key: string): Promise<RateLimitDecision>
}

export interface RateLimitPolicy {
  /** Requests allowed per key and window. */
  points: number
  windowSeconds: number
  /** Keeps the counts of one limit apart from another's (`sends`, `requests`). */
  name: string
}

/** What rate-limiter-flexible limiters have in common, as far as this port needs it. */
export interface FlexibleLimiter {
  /** Counts `points` (1 by default) for key; rejects with a RateLimiterRes past the limit. */
  consume(key: string, points?: number): Promise<RateLimiterRes>
}

/**
 * A RateLimiter over a rate-limiter-flexible limiter: it rejects with a
 * RateLimiterRes when the limit is reached and with an Error when its store
 * fails (which then propagates: a limiter with a fallback never does).
 */
export function flexibleRateLimiter(limiter: FlexibleLimiter): RateLimiter {
  return {
    async consume(key) {
      try {
        const result = await limiter.consume(key)
        return { allowed: true, remaining: result.remainingPoints }
      } catch (rejection) {
        if (!(rejection instanceof RateLimiterRes)) throw rejection
        return { allowed: false, retryAfterMs: Math.max(1, rejection.msBeforeNext) }
      }
    },
  }
}
