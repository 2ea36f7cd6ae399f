// The read side of the conversation API with cache-aside (CONTRACT §4.5-§4.6):
// a hit is one cache read, no database query, and the cached JSON is sent as
// it is. A failing cache falls back to the database.
import { notFound } from '../errors.ts'
import type { Cache } from '../storage/cache.ts'
import type { Db } from '../storage/db.ts'
import { HISTORY_TTL_SECONDS, historyKey, LIST_TTL_SECONDS, listKey } from './cache-keys.ts'
import { listConversations } from './conversations-repository.ts'
import { decodeList, encodeList, type ListPage, listOf, pageOf } from './list-cache.ts'
import { readHistory } from './messages-repository.ts'

export interface ReadDeps {
  db: Db
  cache: Cache
  warn: (message: string, error: unknown) => void
}

/** The history is cached with its owner, so a hit can refuse other users unparsed. */
const ownerPrefix = (userId: string) => `{"owner":${JSON.stringify(userId)},"body":`

async function cached(deps: ReadDeps, key: string): Promise<string | null> {
  try {
    return await deps.cache.get(key)
  } catch (error) {
    deps.warn('cache read failed; using the database', error)
    return null
  }
}

function store(deps: ReadDeps, key: string, value: string, ttl: number): void {
  deps.cache.set(key, value, ttl).catch((error) => deps.warn('cache write failed', error))
}

/** The conversation detail JSON of CONTRACT §4.6; 404 when missing or not the user's. */
export async function conversationDetail(
  deps: ReadDeps,
  userId: string,
  conversationId: string,
): Promise<string> {
  const key = historyKey(conversationId)
  const prefix = ownerPrefix(userId)
  const hit = await cached(deps, key)
  if (hit !== null) {
    if (!hit.startsWith(prefix)) throw notFound('Conversation not found.')
    return hit.slice(prefix.length, -1)
  }
  const rows = await readHistory(deps.db, conversationId, userId)
  if (rows.length === 0) throw notFound('Conversation not found.')
  const body = JSON.stringify({
    conversation_id: conversationId,
    messages: rows.map((row) => ({
      id: row.id,
      role: row.role,
      content: row.content,
      created_at: row.createdAt.toISOString(),
    })),
  })
  store(deps, key, `${prefix}${body}}`, HISTORY_TTL_SECONDS)
  return body
}

/** One page of the user's conversation list (CONTRACT §4.5). */
export async function conversationList(
  deps: ReadDeps,
  userId: string,
  page: ListPage,
): Promise<string> {
  const key = listKey(userId)
  const hit = await cached(deps, key)
  const cachedList = hit === null ? undefined : decodeList(hit)
  if (cachedList) return pageOf(cachedList, page)
  const list = listOf(await listConversations(deps.db, userId))
  store(deps, key, encodeList(list), LIST_TTL_SECONDS)
  return pageOf(list, page)
}
