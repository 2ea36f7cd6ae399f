// The document store's side of the built-in `document_search` tool
// (src/tools/document-search.ts): the same case-insensitive substring query
// as POST /query (repository.ts). The documents table has no owner yet, so
// every user searches the store's documents; when attachments store their
// text as a user's documents (CONTRACT §20), this is where `userId` scopes them.
import type { Queryable } from '../../src/storage/db.ts'
import { containsPattern } from '../../src/storage/like-pattern.ts'
import type { DocumentSearch } from '../../src/tools/document-search.ts'
import { searchDocuments } from './repository.ts'

export function createDocumentSearch(db: Queryable): DocumentSearch {
  return async ({ query, limit }) => {
    const rows = await searchDocuments(db, containsPattern(query), limit)
    return rows.map((row) => ({ id: row.id, content: row.content }))
  }
}
