// The built-in `document_search` tool (CONTRACT §21): searches the documents
// a user may read - the document store's, and the text of the user's own
// attachments once they are stored as documents (§20) - through the
// DocumentSearch port, so this folder knows no SQL and no plugin.
import type { ToolCallContext, ToolResult, ToolSource } from './catalogue.ts'

export const DOCUMENT_SEARCH = 'document_search'

/** One matching document. */
export interface DocumentHit {
  id: string | number
  content: string
  /** The document's metadata, as stored (parsed JSON when it is JSON). */
  metadata?: unknown
}

/**
 * The query behind the tool: documents `userId` may read whose text contains
 * `query` (case-insensitively), at most `limit`.
 */
export type DocumentSearch = (input: {
  userId: string
  query: string
  limit: number
  signal: AbortSignal
}) => Promise<DocumentHit[]>

const DEFAULT_LIMIT = 5
const MAX_LIMIT = 20
/** A hit's text is cut to this: the answer is for reading, and the whole result is capped anyway. */
const MAX_HIT_CHARS = 4_000
const MAX_QUERY_CHARS = 1_000

const PARAMETERS = {
  type: 'object',
  properties: {
    query: {
      type: 'string',
      description: 'Words or a phrase the documents contain (matched case-insensitively).',
    },
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: MAX_LIMIT,
      description: `How many documents at most (default ${DEFAULT_LIMIT}).`,
    },
  },
  required: ['query'],
  additionalProperties: false,
}

function bad(text: string): ToolResult {
  return { text, isError: true }
}

export function documentSearchSource(search: DocumentSearch): ToolSource {
  return {
    name: 'builtin',
    async tools() {
      return [
        {
          name: DOCUMENT_SEARCH,
          description:
            "Searches the user's documents and attachments and the document store for text; answers with the matching documents as JSON.",
          parameters: PARAMETERS,
        },
      ]
    },
    async call(name, args, context: ToolCallContext) {
      if (name !== DOCUMENT_SEARCH) return bad(`There is no tool named ${JSON.stringify(name)}.`)
      const { query, limit = DEFAULT_LIMIT } = args
      if (typeof query !== 'string' || query.trim() === '')
        return bad('`query` must be a non-empty string.')
      if (query.length > MAX_QUERY_CHARS)
        return bad(`\`query\` must be at most ${MAX_QUERY_CHARS} characters.`)
      if (!Number.isInteger(limit) || (limit as number) < 1 || (limit as number) > MAX_LIMIT)
        return bad(`\`limit\` must be a whole number from 1 to ${MAX_LIMIT}.`)
      const hits = await search({
        userId: context.userId,
        query: query.trim(),
        limit: limit as number,
        signal: context.signal,
      })
      const results = hits.map((hit) => ({
        id: hit.id,
        content:
          hit.content.length > MAX_HIT_CHARS
            ? `${hit.content.slice(0, MAX_HIT_CHARS)}…`
            : hit.content,
        ...(hit.metadata === undefined ? {} : { metadata: hit.metadata }),
      }))
      return { text: JSON.stringify({ results }), isError: false }
    },
  }
}

/**
 * One search over several (the user's attachments, then the document store):
 * each asked for what the ones before it left of the limit, in order.
 */
export function searchInOrder(searches: readonly DocumentSearch[]): DocumentSearch {
  return async (input) => {
    const hits: DocumentHit[] = []
    for (const search of searches) {
      const left = input.limit - hits.length
      if (left <= 0) break
      hits.push(...(await search({ ...input, limit: left })))
    }
    return hits
  }
}
