// The read side of the conversation API with cache-aside (CONTRACT §4.5-§4.6):
// a hit is one cache read, no database query, and the cached JSON is sent as
// it is. A cache that is down answers as a miss (resilient-cache.ts), so the
// database answers instead. A miss marks the key as being filled before it
// reads the database (Cache.startFill) and stores the copy only if no write
// invalidated the key meanwhile: otherwise a read that raced a send or a
// rename would store what it read before the change, after the change's
// invalidation, and serve it for the key's whole expiry.
import { notFound } from '../../errors.ts'
import type { Cache } from '../../storage/cache.ts'
import type { Db } from '../../storage/db.ts'
import { listConversations } from '../sql/conversations-repository.ts'
import { readTree } from '../sql/tree-repository.ts'
import { detailBody } from '../tree/tree-detail.ts'
import { HISTORY_TTL_SECONDS, historyKey, LIST_TTL_SECONDS, listKey } from './cache-keys.ts'
import { encodeList, type ListPage, listOf, pageOf } from './list-cache.ts'
import type { ListPages } from './list-pages.ts'

export interface ReadDeps {
  db: Db
  cache: Cache
  warn: (message: string, error: unknown) => void
  /** Pages already cut from the list documents the cache returns. */
  listPages: ListPages
  /** The detail's `default_model_slug` when no reply names a model (default-model-slug.ts). */
  modelSlug: string
}

/** The history is cached with its owner, so a hit can refuse other users unparsed. */
const ownerPrefix = (userId: string) => `{"owner":${JSON.stringify(userId)},"body":`

/** Fills the cache without making the reader wait for it, unless a write voided the fill. */
function store(deps: ReadDeps, key: string, fill: string, value: string, ttl: number): void {
  deps.cache.fill(key, fill, value, ttl).catch((error) => deps.warn('cache write failed', error))
}

/** The conversation detail JSON of CONTRACT §4.6, §10 and §17; not found when missing or not the user's. */
export async function conversationDetail(
  deps: ReadDeps,
  userId: string,
  conversationId: string,
): Promise<string> {
  const key = historyKey(conversationId)
  const prefix = ownerPrefix(userId)
  const hit = await deps.cache.get(key)
  if (hit !== null) {
    if (!hit.startsWith(prefix)) throw notFound('Conversation not found.')
    return hit.slice(prefix.length, -1)
  }
  const fill = await deps.cache.startFill(key)
  const tree = await readTree(deps.db, conversationId, userId)
  if (!tree) throw notFound('Conversation not found.')
  const body = detailBody(tree.head, tree.rows, deps.modelSlug)
  store(deps, key, fill, `${prefix}${body}}`, HISTORY_TTL_SECONDS)
  return body
}

/** One page of the user's conversation list (CONTRACT §4.5). */
export async function conversationList(
  deps: ReadDeps,
  userId: string,
  page: ListPage,
): Promise<string> {
  const key = listKey(userId)
  const hit = await deps.cache.get(key)
  const cachedPage = hit === null ? undefined : deps.listPages(key, hit, page)
  if (cachedPage !== undefined) return cachedPage
  const fill = await deps.cache.startFill(key)
  const list = listOf(await listConversations(deps.db, userId))
  store(deps, key, fill, encodeList(list), LIST_TTL_SECONDS)
  return pageOf(list, page)
}
