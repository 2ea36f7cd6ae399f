// The user's own documents for the built-in `document_search` tool (CONTRACT
// §20-§21): the text read from the files they uploaded (a text file as it
// was, a PDF's extracted text), found by a case-insensitive substring as the
// document store's POST /query finds its documents. Only the owner's ready
// files are searched: another user's attachments never answer.
import type { Queryable } from '../storage/db.ts'
import { containsPattern } from '../storage/like-pattern.ts'
import type { DocumentSearch } from '../tools/document-search.ts'

export function createFileDocumentSearch(db: Queryable): DocumentSearch {
  return async ({ userId, query, limit }) => {
    const rows = await db.query<{ id: string; name: string; text: string }>(
      `SELECT id, name, text FROM files
        WHERE user_id = $1 AND status = 'ready' AND text IS NOT NULL AND text ILIKE $2
        ORDER BY uploaded_at DESC, id
        LIMIT $3`,
      [userId, containsPattern(query), limit],
    )
    return rows.map((row) => ({
      id: row.id,
      content: row.text,
      metadata: { source: 'attachment', name: row.name },
    }))
  }
}
