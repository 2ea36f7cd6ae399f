// Request and response schemas of the document store. They validate input
// (a failure is a 422 naming the field, CONTRACT §3), shape output, and are
// what /docs and /redoc show; the static types come from them too.
import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { MAX_BODY_BYTES } from '../../src/http/body-limit.ts'
import { DEFAULT_TOP_K, MAX_TOP_K } from './limits.ts'

export const Metadata = t.Object(
  {},
  {
    additionalProperties: true,
    description: 'Any JSON object. Stored as its JSON text and returned as the same object.',
  },
)
export type Metadata = typeof Metadata.static

// Unknown extra fields are accepted and ignored, as real clients send them.
const openBody = { additionalProperties: true }

export const DocumentBody = t.Object(
  {
    content: t.String({
      minLength: 1,
      maxLength: MAX_BODY_BYTES,
      description: 'The text of the document. A second document with the same content is refused.',
    }),
    metadata: t.Optional(Metadata),
  },
  openBody,
)
export type DocumentBody = typeof DocumentBody.static

export const QueryBody = t.Object(
  {
    question: t.String({
      minLength: 1,
      description:
        'Matched as a literal, case-insensitive substring of the content (% and _ are plain characters).',
    }),
    // TypeBox's own Integer: Elysia's t.Integer also accepts numeric strings like "5".
    top_k: t.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_TOP_K,
        default: DEFAULT_TOP_K,
        description: 'Most results to return.',
      }),
    ),
  },
  openBody,
)
export type QueryBody = typeof QueryBody.static

export const ServiceInfo = t.Object({
  service: t.String({ examples: ['conduit'] }),
  status: t.String({ examples: ['running'] }),
})

export const Health = t.Object({
  api: t.Literal('healthy'),
  postgres: t.String({
    description:
      '`connected`, or `error: unreachable` when the database does not answer (then 503).',
    examples: ['connected'],
  }),
  redis: t.Union([t.Literal('connected'), t.Literal('disconnected')]),
  database: t.Union([t.Literal('postgres'), t.Literal('embedded')]),
  cache: t.Union([t.Literal('redis'), t.Literal('memory')]),
})

// TypeBox's Integer for ids: Elysia's t.Integer documents itself as "integer or numeric string".
const Id = () => Type.Integer({ minimum: 1 })

export const DocumentCreated = t.Object(
  { id: Id(), message: t.String() },
  { title: 'DocumentCreated', description: 'The document was stored.' },
)
export const DocumentCachedDuplicate = t.Object(
  { message: t.String(), cached: t.Literal(true) },
  {
    title: 'DocumentCachedDuplicate',
    description: 'The cache already knew this content; nothing was stored.',
  },
)
export const DocumentStoredDuplicate = t.Object(
  { message: t.String(), id: Id(), cached: t.Literal(false) },
  {
    title: 'DocumentStoredDuplicate',
    description:
      'The database already holds this content (its id is returned); nothing was stored.',
  },
)
export const CreateDocumentResult = t.Union([
  DocumentCreated,
  DocumentCachedDuplicate,
  DocumentStoredDuplicate,
])
export type CreateDocumentResult = typeof CreateDocumentResult.static

export const StoredDocument = t.Object({
  id: Id(),
  content: t.String(),
  metadata: Metadata,
})
export type StoredDocument = typeof StoredDocument.static

export const DocumentList = t.Object({
  documents: t.Array(StoredDocument, {
    description: 'At most 100 documents, newest (highest id) first.',
  }),
  cached: t.Boolean({ description: 'True when the list came from the 60-second cache.' }),
})
export type DocumentList = typeof DocumentList.static

export const QueryResult = t.Object({
  query: t.String({ description: 'The question, as sent.' }),
  results: t.Array(t.Object({ id: Id(), content: t.String() }), {
    description: 'Matching documents in ascending id, at most top_k.',
  }),
})
export type QueryResult = typeof QueryResult.static

export const Message = t.Object({ message: t.String() })
