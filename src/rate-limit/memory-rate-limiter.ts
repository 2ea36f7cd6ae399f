// RateLimiter adapter for one process: counts in memory (rate-limiter-flexible's
// RateLimiterMemory), each window's keys dropped when it ends.
import { RateLimiterMemory } from 'rate-limiter-flexible'
import { flexibleRateLimiter, type RateLimiter, type RateLimitPolicy } from './rate-limiter.ts'

export const memoryLimiterOf = (policy: RateLimitPolicy) =>
  new RateLimiterMemory({
    points: policy.points,
    duration: policy.windowSeconds,
    keyPrefix: policy.name,
  })

export function createMemoryRateLimiter(policy: RateLimitPolicy): RateLimiter {
  return flexibleRateLimiter(memoryLimiterOf(policy))
}
