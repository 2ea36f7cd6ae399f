// The model's context (CONTRACT §4.7): the last 20 finished messages before a
// turn's reply, kept as JSON in the cache list `chat:{id}:context` and rebuilt
// from the database whenever the cache lost it. Only the runner holding the
// conversation's lease touches the list, one turn at a time, so it grows in
// the conversation's order. The cache failing never fails a turn.
import type { Cache } from '../storage/cache.ts'
import type { Db } from '../storage/db.ts'
import { CONTEXT_LENGTH, CONTEXT_TTL_SECONDS, contextKey } from './cache-keys.ts'
import type { StoredMessage } from './messages.ts'
import { recentMessages } from './messages-repository.ts'

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
 * The context a turn answers, oldest first, and the list brought up to date
 * with the turn's user messages (`inputs`, already stored). A missing or
 * unreadable list is rebuilt from the finished messages stored before the
 * turn's reply (seq `beforeSeq`).
 */
export async function contextForTurn(
  deps: ContextDeps,
  conversationId: string,
  beforeSeq: number,
  inputs: readonly StoredMessage[],
): Promise<StoredMessage[]> {
  const key = contextKey(conversationId)
  try {
    const cached = (await deps.cache.listAll(key)).map(decode)
    if (cached.length > 0 && cached.every((message) => message !== undefined)) {
      await deps.cache.listPush(key, inputs.map(encode), CONTEXT_LENGTH, CONTEXT_TTL_SECONDS)
      return [...(cached as StoredMessage[]), ...inputs].slice(-CONTEXT_LENGTH)
    }
  } catch (error) {
    deps.warn('context cache unavailable; reading context from the database', error)
    return recentMessages(deps.db, conversationId, CONTEXT_LENGTH, beforeSeq)
  }
  const rebuilt = await recentMessages(deps.db, conversationId, CONTEXT_LENGTH, beforeSeq)
  await deps.cache
    .listReplace(key, rebuilt.map(encode), CONTEXT_TTL_SECONDS)
    .catch((error) => deps.warn('could not rebuild the context list', error))
  return rebuilt
}

/**
 * Adds a stored reply to the list. A list the cache lost stays lost (the next
 * turn rebuilds it from the database) rather than restarting with the reply.
 */
export async function recordReply(
  deps: ContextDeps,
  conversationId: string,
  reply: StoredMessage,
): Promise<void> {
  const key = contextKey(conversationId)
  try {
    if ((await deps.cache.listAll(key)).length === 0) return
    await deps.cache.listPush(key, [encode(reply)], CONTEXT_LENGTH, CONTEXT_TTL_SECONDS)
  } catch (error) {
    deps.warn('could not update the context list; dropping it', error)
    await deps.cache.del(key).catch(() => {})
  }
}

/** Drops the list (a turn finished by someone other than its runner); the next turn rebuilds it. */
export async function forgetContext(deps: ContextDeps, conversationId: string): Promise<void> {
  await deps.cache
    .del(contextKey(conversationId))
    .catch((error) => deps.warn('could not drop the context list', error))
}
