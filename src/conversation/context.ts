// The model's context: the last 20 messages of a conversation, kept as JSON in
// the cache list `chat:{id}:context` and rebuilt from the database whenever
// the cache lost it. The cache failing never fails a turn.
import type { Cache } from '../storage/cache.ts'
import type { Db } from '../storage/db.ts'
import { CONTEXT_LENGTH, CONTEXT_TTL_SECONDS, contextKey } from './cache-keys.ts'
import type { StoredMessage } from './messages.ts'
import { recentMessages } from './repository.ts'

export interface ContextDeps {
  db: Db
  cache: Cache
  warn: (message: string, error: unknown) => void
}

const encode = (message: StoredMessage) =>
  JSON.stringify({
    id: message.id,
    role: message.role,
    content: message.content,
    create_time: message.createTime,
  })

function decode(entry: string): StoredMessage | undefined {
  try {
    const value = JSON.parse(entry) as {
      id: string
      role: 'user' | 'assistant'
      content: StoredMessage['content']
      create_time: number
    }
    return { id: value.id, role: value.role, content: value.content, createTime: value.create_time }
  } catch {
    return undefined
  }
}

/**
 * Records messages just stored in the database and returns the context that
 * includes them, oldest first. When the list is missing it is rebuilt from the
 * database (which already holds the new messages) instead of appended to.
 */
export async function appendToContext(
  deps: ContextDeps,
  conversationId: string,
  stored: readonly StoredMessage[],
): Promise<StoredMessage[]> {
  const key = contextKey(conversationId)
  try {
    const cached = await deps.cache.listAll(key)
    if (cached.length > 0) {
      await deps.cache.listPush(key, stored.map(encode), CONTEXT_LENGTH, CONTEXT_TTL_SECONDS)
      const known = cached.map(decode)
      if (known.every((message) => message !== undefined))
        return [...(known as StoredMessage[]), ...stored].slice(-CONTEXT_LENGTH)
    }
  } catch (error) {
    deps.warn('context cache unavailable; reading context from the database', error)
    return recentMessages(deps.db, conversationId, CONTEXT_LENGTH)
  }
  const rebuilt = await recentMessages(deps.db, conversationId, CONTEXT_LENGTH)
  await deps.cache
    .listReplace(key, rebuilt.map(encode), CONTEXT_TTL_SECONDS)
    .catch((error) => deps.warn('could not rebuild the context list', error))
  return rebuilt
}
