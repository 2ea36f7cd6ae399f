// In-process ConversationLeases adapter: a Map of conversation -> grant with an
// expiry time, for the embedded (single-process) setup and for tests. Fencing
// tokens come from one module-wide counter seeded by the clock, so they
// increase across every memory store of the process and across restarts.
import type { ConversationLeases, Lease } from './conversation-leases.ts'

interface Grant {
  token: number
  /** Epoch ms, by the store's clock. */
  expiresAt: number
  /** An acquire was refused while this grant held the lease. */
  wanted?: boolean
}

export interface MemoryLeasesOptions {
  /** Clock for expiry, epoch ms (tests). Fencing tokens always use the real clock. */
  now?: () => number
}

/** Expired grants nobody touches again are swept once the map holds this many. */
const SWEEP_THRESHOLD = 1_000

let lastToken = 0

/** Clock microseconds, bumped past the last token issued in this process. */
function nextToken(): number {
  const token = Math.max(Date.now() * 1000, lastToken + 1)
  if (!Number.isSafeInteger(token)) throw new RangeError(`fencing token ${token} exceeds 2^53`)
  lastToken = token
  return token
}

function checkTtl(ttlMs: number) {
  if (!Number.isSafeInteger(ttlMs) || ttlMs <= 0)
    throw new RangeError(`lease ttl must be a positive integer of ms, got ${ttlMs}`)
}

/** An in-process lease store; its leases are visible only to this process. */
export function createMemoryLeases(options: MemoryLeasesOptions = {}): ConversationLeases {
  const now = options.now ?? Date.now
  const grants = new Map<string, Grant>()

  const live = (conversationId: string): Grant | undefined => {
    const grant = grants.get(conversationId)
    if (grant !== undefined && grant.expiresAt <= now()) {
      grants.delete(conversationId)
      return undefined
    }
    return grant
  }
  /** The lease's grant, while it still holds the lease. */
  const heldBy = (lease: Lease) => {
    const grant = live(lease.conversationId)
    return grant?.token === lease.token ? grant : undefined
  }
  const sweep = () => {
    if (grants.size < SWEEP_THRESHOLD) return
    for (const conversationId of grants.keys()) live(conversationId)
  }

  return {
    async acquire(conversationId, ttlMs) {
      checkTtl(ttlMs)
      sweep()
      const held = live(conversationId)
      if (held !== undefined) {
        held.wanted = true
        return undefined
      }
      const token = nextToken()
      grants.set(conversationId, { token, expiresAt: now() + ttlMs })
      return { conversationId, token }
    },
    async renew(lease, ttlMs) {
      checkTtl(ttlMs)
      const grant = heldBy(lease)
      if (grant) grant.expiresAt = now() + ttlMs
      return grant !== undefined
    },
    async release(lease) {
      const grant = heldBy(lease)
      if (grant) grants.delete(lease.conversationId)
      return grant?.wanted === true
    },
    async isHeld(conversationId) {
      return live(conversationId) !== undefined
    },
    async close() {},
  }
}
