// Custom instructions with cache-aside (CONTRACT §16), for GET and POST
// /user_system_messages. (A turn does not come here: the statement that
// stores or claims it reads its user's instructions in the same round trip:
// sql/user-instructions.ts.) A hit is one cache read; a miss reads
// the database and fills the key unless a change voided the fill meanwhile
// (Cache.startFill), so instructions read before a change are never cached
// after it. A change drops the key once it is committed. A cache that is down
// answers as a miss (resilient-cache.ts): the database answers instead.
import type { Cache } from '../../storage/cache.ts'
import type { Db } from '../../storage/db.ts'
import type { CustomInstructions, InstructionsChange } from './instructions.ts'
import { changeInstructions, readInstructions } from './repository.ts'

export const INSTRUCTIONS_TTL_SECONDS = 600
export const instructionsKey = (userId: string) => `user:${userId}:system_message`

export interface InstructionsStore {
  /** The user's instructions (defaults when none were set). */
  get(userId: string): Promise<CustomInstructions>
  /** Applies a change; resolves with the instructions as stored. */
  change(userId: string, change: InstructionsChange): Promise<CustomInstructions>
}

function decode(text: string): CustomInstructions | undefined {
  try {
    const value = JSON.parse(text) as CustomInstructions
    return typeof value.enabled === 'boolean' ? value : undefined
  } catch {
    return undefined
  }
}

export function createInstructionsStore(deps: {
  db: Db
  cache: Cache
  warn: (message: string, error: unknown) => void
}): InstructionsStore {
  const { db, cache, warn } = deps
  return {
    async get(userId) {
      const key = instructionsKey(userId)
      const hit = await cache.get(key)
      const cached = hit === null ? undefined : decode(hit)
      if (cached) return cached
      const fill = await cache.startFill(key)
      const instructions = await readInstructions(db, userId)
      // Awaited (a miss is rare: once per user per expiry), so the next read hits.
      await cache
        .fill(key, fill, JSON.stringify(instructions), INSTRUCTIONS_TTL_SECONDS)
        .catch((error) => warn('cache write failed', error))
      return instructions
    },
    async change(userId, change) {
      const stored = await changeInstructions(db, userId, change)
      await cache.del(instructionsKey(userId))
      return stored
    },
  }
}
