// ConversationLeases adapter for Redis (the state's keys), shared by every
// instance. Each operation is one Lua script, so check-and-set is atomic:
// acquire sets the lease key only when absent (else marks it wanted, in
// `lease:{<conversation>}:wanted`), renew and release touch it only while it
// still holds the caller's fencing token; release reports and clears the mark.
// Renewals asked for in one tick (a runner renews all its leases at once) go
// out as one script call (one per slot on a Cluster). Tokens come from the
// Redis clock in microseconds, bumped past the conversation's last token
// (`lease:{<conversation>}:fence`, kept a week), so they increase for each
// conversation whatever the clocks of a failover's new primary say, and
// across conversations, instances and a wiped store as far as the clocks do.
// Every key of a conversation's lease carries its hash tag: one slot.

import { leaseKeys } from '../storage/keyspace.ts'
import type { RedisClient } from '../storage/redis-connections.ts'
import { redisScript } from '../storage/redis-script.ts'
import { bySlot } from '../storage/redis-slots.ts'
import type { ConversationLeases } from './conversation-leases.ts'
import acquireLua from './scripts/lease-acquire.lua' with { type: 'text' }
import releaseLua from './scripts/lease-release.lua' with { type: 'text' }
import renewLua from './scripts/lease-renew.lua' with { type: 'text' }

/** Sets the lease when absent, else marks it wanted (scripts/lease-acquire.lua). */
const ACQUIRE = redisScript(acquireLua)

/** How long a conversation's last token is kept after its last acquire. */
const FENCE_KEPT_MS = 7 * 86_400_000

/** Renews the leases still held by their tokens, in one call (scripts/lease-renew.lua). */
const RENEW = redisScript(renewLua)

/** Leases renewed in one script call at most (a bigger tick's renewals take several). */
const MAX_RENEWALS_PER_CALL = 1_000

interface Renewal {
  key: string
  token: string
  resolve: (held: boolean) => void
  reject: (error: unknown) => void
}

/** Drops a lease still held by its token: was it wanted? (scripts/lease-release.lua) */
const RELEASE = redisScript(releaseLua)

export interface RedisLeasesOptions {
  /** A client connected to the state database; it stays the caller's to close. */
  redis: RedisClient
  /** The state's role prefix (storage/keyspace.ts); tests use a random one. */
  keyPrefix?: string
}

function checkTtl(ttlMs: number) {
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0)
    throw new RangeError(`lease ttl must be a positive integer of ms, got ${ttlMs}`)
}

/** A lease store in Redis, shared by every instance connected to the same database and prefix. */
export function createRedisLeases(options: RedisLeasesOptions): ConversationLeases {
  const { redis } = options
  const prefix = options.keyPrefix ?? ''
  const leaseKey = (conversationId: string) => leaseKeys(prefix, conversationId).lease
  /** Renewals of this tick, by ttl. */
  let queued = new Map<number, Renewal[]>()

  async function renewTogether(ttlMs: number, renewals: Renewal[]): Promise<void> {
    try {
      const held = await RENEW.run(
        redis,
        renewals.map((renewal) => renewal.key),
        [ttlMs, ...renewals.map((renewal) => renewal.token)],
      )
      if (!Array.isArray(held)) throw new Error('unexpected reply to a lease renewal')
      for (const [index, renewal] of renewals.entries()) renewal.resolve(held[index] === 1)
    } catch (error) {
      for (const renewal of renewals) renewal.reject(error)
    }
  }

  function flushRenewals(): void {
    const batch = queued
    queued = new Map()
    for (const [ttlMs, all] of batch)
      for (const renewals of bySlot(redis, all, (renewal) => renewal.key))
        for (let start = 0; start < renewals.length; start += MAX_RENEWALS_PER_CALL)
          void renewTogether(ttlMs, renewals.slice(start, start + MAX_RENEWALS_PER_CALL))
  }

  return {
    async acquire(conversationId, ttlMs) {
      checkTtl(ttlMs)
      const { lease, fence, wanted } = leaseKeys(prefix, conversationId)
      const token = await ACQUIRE.run(redis, [lease, fence, wanted], [ttlMs, FENCE_KEPT_MS])
      if (token === null) return undefined
      if (typeof token !== 'number' || !Number.isSafeInteger(token))
        throw new RangeError(`fencing token ${String(token)} is not an integer below 2^53`)
      return { conversationId, token }
    },
    async renew(lease, ttlMs) {
      checkTtl(ttlMs)
      return await new Promise<boolean>((resolve, reject) => {
        if (queued.size === 0) queueMicrotask(flushRenewals)
        const renewals = queued.get(ttlMs) ?? []
        queued.set(ttlMs, renewals)
        renewals.push({
          key: leaseKey(lease.conversationId),
          token: String(lease.token),
          resolve,
          reject,
        })
      })
    },
    async release(grant) {
      const { lease, wanted } = leaseKeys(prefix, grant.conversationId)
      return (await RELEASE.run(redis, [lease, wanted], [String(grant.token)])) === 1
    },
    async isHeld(conversationId) {
      return (await redis.exists(leaseKey(conversationId))) === 1
    },
    async close() {},
  }
}
