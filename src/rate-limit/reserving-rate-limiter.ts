// A RateLimiter that takes a shared store's points in blocks and spends them
// in the process: for the looser requests limit, which a default deployment
// checks on every request, so that a cache hit does not pay a round trip to
// the state Redis each time. Per key, the first request of a window reserves
// 1 point, and each later reservation doubles the block, but never takes more
// than half of what the store says is left; the last points go one at a time.
// So one process alone is allowed exactly the window's points, and instances
// sharing the store are never allowed more than that in all (a block one
// holds unspent can make another refuse early, by at most half of what was
// left when it was taken). A busy user costs about 2·log2(points) round trips
// a window instead of one per request. Once the store refuses, the key is
// refused in the process until the window ends: nobody can be allowed before.
import { LRUCache } from 'lru-cache'
import { RateLimiterRes } from 'rate-limiter-flexible'
import type { FlexibleLimiter, RateLimitDecision, RateLimiter } from './rate-limiter.ts'

interface Reserve {
  /** Points reserved in the store and not yet spent here. */
  unspent: number
  /** Size of the last block reserved. */
  block: number
  /** Points the store had left after the last reservation. */
  storeRemaining: number
  /** Epoch ms at which the window, and this reserve, ends. */
  windowEndsAt: number
  /** The store refused: every request is refused until the window ends. */
  refused: boolean
}

/** Keys with a reserve kept at once; an evicted reserve only loses its unspent points. */
const MAX_KEYS = 100_000

export function reservingRateLimiter(store: FlexibleLimiter): RateLimiter {
  const now = Date.now
  const reserves = new LRUCache<string, Reserve>({ max: MAX_KEYS })
  /** The reservation in flight per key: others wait for it rather than reserve too. */
  const reserving = new Map<string, Promise<void>>()

  const current = (key: string) => {
    const reserve = reserves.get(key)
    if (reserve !== undefined && now() >= reserve.windowEndsAt) {
      reserves.delete(key)
      return undefined
    }
    return reserve
  }

  async function reserveBlock(key: string, previous: Reserve | undefined): Promise<void> {
    const block =
      previous === undefined
        ? 1
        : Math.max(1, Math.min(previous.block * 2, Math.floor(previous.storeRemaining / 2)))
    try {
      const result = await store.consume(key, block)
      reserves.set(key, {
        unspent: block,
        block,
        storeRemaining: result.remainingPoints,
        windowEndsAt: now() + result.msBeforeNext,
        refused: false,
      })
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection
      reserves.set(key, {
        unspent: 0,
        block,
        storeRemaining: 0,
        windowEndsAt: now() + Math.max(1, rejection.msBeforeNext),
        refused: true,
      })
    }
  }

  return {
    async consume(key): Promise<RateLimitDecision> {
      for (;;) {
        const reserve = current(key)
        if (reserve?.refused)
          return { allowed: false, retryAfterMs: Math.max(1, reserve.windowEndsAt - now()) }
        if (reserve !== undefined && reserve.unspent > 0) {
          reserve.unspent--
          return { allowed: true, remaining: reserve.storeRemaining + reserve.unspent }
        }
        let pending = reserving.get(key)
        if (pending === undefined) {
          pending = reserveBlock(key, reserve).finally(() => reserving.delete(key))
          reserving.set(key, pending)
        }
        await pending
      }
    },
  }
}
