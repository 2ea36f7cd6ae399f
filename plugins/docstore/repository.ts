// SQL for the documents table (src/storage/migrations/002_documents.sql). The
// same text runs on postgres.js and PGlite.
import type { Queryable } from '../../src/storage/db.ts'

export type DocumentRow = {
  id: number
  content: string
  /** The JSON text of the metadata object; NULL only for rows written by other tools. */
  metadata: string | null
}

export type SearchRow = {
  id: number
  content: string
}

/**
 * Inserts a document unless one with the same content hash exists; returns the
 * new id, or undefined for a duplicate. The unique index decides, so two
 * concurrent inserts of one content cannot both succeed.
 */
export async function insertDocument(
  db: Queryable,
  doc: { content: string; metadata: string; contentSha256: string },
): Promise<number | undefined> {
  const rows = await db.query<{ id: number }>(
    `INSERT INTO documents (content, metadata, content_sha256)
     VALUES ($1, $2, $3)
     ON CONFLICT (content_sha256) DO NOTHING
     RETURNING id`,
    [doc.content, doc.metadata, doc.contentSha256],
  )
  return rows[0]?.id
}

/** The id of the document with this content hash, if any. */
export async function findDocumentIdByHash(
  db: Queryable,
  contentSha256: string,
): Promise<number | undefined> {
  const rows = await db.query<{ id: number }>(
    'SELECT id FROM documents WHERE content_sha256 = $1',
    [contentSha256],
  )
  return rows[0]?.id
}

/** The newest documents first (highest id), at most `limit`. */
export function listNewestDocuments(db: Queryable, limit: number): Promise<DocumentRow[]> {
  return db.query<DocumentRow>(
    'SELECT id, content, metadata FROM documents ORDER BY id DESC LIMIT $1',
    [limit],
  )
}

/**
 * Documents whose content contains the pattern case-insensitively, ascending
 * id. Exported so a test can EXPLAIN exactly this statement: the trigram index
 * answers its ILIKE.
 */
export const SEARCH_SQL = `SELECT id, content FROM documents
WHERE content ILIKE $1 ESCAPE '\\'
ORDER BY id
LIMIT $2`

/** Runs SEARCH_SQL; `pattern` comes from containsPattern(). */
export function searchDocuments(
  db: Queryable,
  pattern: string,
  limit: number,
): Promise<SearchRow[]> {
  return db.query<SearchRow>(SEARCH_SQL, [pattern, limit])
}
