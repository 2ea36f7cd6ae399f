// The document store's use cases (spec §4 rules 1-3) over the Db and Cache
// ports. The database is the truth and enforces uniqueness; the cache only
// saves work, and a cache that is down answers as a miss (resilient-cache.ts),
// so the database answers instead.

import type { Cache } from '../../src/storage/cache.ts'
import type { Db } from '../../src/storage/db.ts'
import { containsPattern } from '../../src/storage/like-pattern.ts'
import {
  DOCUMENT_KEY_TTL_SECONDS,
  DOCUMENT_LIST_KEY,
  DOCUMENT_LIST_LIMIT,
  DOCUMENT_LIST_TTL_SECONDS,
  documentKey,
} from './cache-keys.ts'
import { contentSha256 } from './content-hash.ts'
import { DEFAULT_TOP_K } from './limits.ts'
import {
  findDocumentIdByHash,
  insertDocument,
  listNewestDocuments,
  searchDocuments as searchRows,
} from './repository.ts'
import type {
  CreateDocumentResult,
  DocumentBody,
  DocumentList,
  Metadata,
  QueryResult,
  StoredDocument,
} from './schemas.ts'

export interface DocumentStoreDeps {
  db: Db
  cache: Cache
}

const CREATED = 'Document created.'
const ALREADY_EXISTS = 'A document with this content already exists.'

/** The stored JSON text as an object; anything else (NULL, foreign rows) reads as `{}`. */
export function parseMetadata(text: string | null): Metadata {
  if (text === null) return {}
  try {
    const value: unknown = JSON.parse(text)
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Metadata)
      : {}
  } catch {
    return {}
  }
}

/** POST /documents: dedupe by the doc:<sha256> key, then by the database's unique index. */
export async function createDocument(
  { db, cache }: DocumentStoreDeps,
  body: DocumentBody,
): Promise<CreateDocumentResult> {
  const hash = contentSha256(body.content)
  const key = documentKey(hash)
  const known = await cache.get(key)
  if (known !== null) return { message: ALREADY_EXISTS, cached: true }

  const metadata = JSON.stringify(body.metadata ?? {})
  // Two rounds cover the one race left: the duplicate is deleted between our
  // refused insert and the lookup of its id.
  for (let round = 0; round < 2; round++) {
    const id = await insertDocument(db, { content: body.content, metadata, contentSha256: hash })
    if (id !== undefined) {
      await Promise.all([
        cache.set(key, String(id), DOCUMENT_KEY_TTL_SECONDS),
        cache.del(DOCUMENT_LIST_KEY),
      ])
      return { id, message: CREATED }
    }
    const existing = await findDocumentIdByHash(db, hash)
    if (existing !== undefined) {
      // Remember it again, so the next duplicate is refused without a query.
      await cache.set(key, String(existing), DOCUMENT_KEY_TTL_SECONDS)
      return { message: ALREADY_EXISTS, id: existing, cached: false }
    }
  }
  throw new Error('document insert kept conflicting with a vanishing duplicate')
}

function cachedList(raw: string | null): StoredDocument[] | undefined {
  if (raw === null) return undefined
  try {
    const value: unknown = JSON.parse(raw)
    return Array.isArray(value) ? (value as StoredDocument[]) : undefined
  } catch {
    return undefined
  }
}

/**
 * GET /documents: cache-aside under documents:list for 60 s. The copy is
 * stored only if no new document invalidated the key while the list was read
 * (Cache.startFill), so it never outlives a change it predates.
 */
export async function listDocuments({ db, cache }: DocumentStoreDeps): Promise<DocumentList> {
  const hit = cachedList(await cache.get(DOCUMENT_LIST_KEY))
  if (hit) return { documents: hit, cached: true }
  const fill = await cache.startFill(DOCUMENT_LIST_KEY)
  const rows = await listNewestDocuments(db, DOCUMENT_LIST_LIMIT)
  const documents = rows.map((row) => ({
    id: row.id,
    content: row.content,
    metadata: parseMetadata(row.metadata),
  }))
  await cache.fill(DOCUMENT_LIST_KEY, fill, JSON.stringify(documents), DOCUMENT_LIST_TTL_SECONDS)
  return { documents, cached: false }
}

/** POST /query: literal, case-insensitive substring match, ascending id. */
export async function searchDocuments(
  { db }: Pick<DocumentStoreDeps, 'db'>,
  question: string,
  topK = DEFAULT_TOP_K,
): Promise<QueryResult> {
  const rows = await searchRows(db, containsPattern(question), topK)
  return { query: question, results: rows.map((row) => ({ id: row.id, content: row.content })) }
}
