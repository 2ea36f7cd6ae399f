// The document store as one named Elysia plugin (spec §4, CONTRACT §6). Routes
// only validate, call the use cases and shape the answer; every route carries
// its schemas so /docs/json describes it.
import { Elysia } from 'elysia'
import type { Config } from '../../src/config.ts'
import { ErrorBody } from '../../src/http/error-schema.ts'
import { type Logger, warnTo } from '../../src/observability/logger.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db } from '../../src/storage/db.ts'
import { requireAdmin } from './admin-guard.ts'
import { createDocument, listDocuments, searchDocuments } from './documents.ts'
import { checkHealth } from './health.ts'
import { DEFAULT_TOP_K } from './limits.ts'
import {
  CreateDocumentResult,
  DocumentBody,
  DocumentList,
  Health,
  Message,
  QueryBody,
  QueryResult,
  ServiceInfo,
} from './schemas.ts'

export interface DocstoreDeps {
  db: Db
  cache: Cache
  config: Config
  /** Where cache trouble is reported; silent when absent. */
  log?: Logger
}

export const SERVICE_NAME = 'conduit'

const tags = ['documents']

export function docstorePlugin({ db, cache, config, log }: DocstoreDeps) {
  const store = { db, cache, warn: log ? warnTo(log) : undefined }
  return new Elysia({ name: 'docstore' })
    .get('/', () => ({ service: SERVICE_NAME, status: 'running' }), {
      response: { 200: ServiceInfo },
      detail: { tags, summary: 'Name and state of the service' },
    })
    .get(
      '/health',
      async ({ status }) => {
        const health = await checkHealth(db, cache)
        return status(health.status, health.body)
      },
      {
        response: { 200: Health, 503: Health },
        detail: {
          tags,
          summary: 'Connection state of the database and the cache',
          description: 'Answers 503 when the database does not answer; the cache alone never does.',
        },
      },
    )
    .post('/documents', ({ body }) => createDocument(store, body), {
      body: DocumentBody,
      response: { 200: CreateDocumentResult, 413: ErrorBody, 422: ErrorBody },
      detail: {
        tags,
        summary: 'Store a document unless its content is already stored',
        description:
          'Deduplicated by the SHA-256 of the content: first through the `doc:<hash>` cache key ' +
          '(1 hour), then by the database, which refuses a duplicate even after the cache was flushed.',
      },
    })
    .get('/documents', () => listDocuments(store), {
      response: { 200: DocumentList },
      detail: {
        tags,
        summary: 'The newest documents',
        description:
          'At most 100, newest first; cached for 60 seconds and refreshed by a new document.',
      },
    })
    .post(
      '/query',
      ({ body }) => searchDocuments({ db }, body.question, body.top_k ?? DEFAULT_TOP_K),
      {
        body: QueryBody,
        response: { 200: QueryResult, 413: ErrorBody, 422: ErrorBody },
        detail: { tags, summary: 'Documents containing a text, case-insensitively' },
      },
    )
    .delete(
      '/cache',
      async ({ headers }) => {
        requireAdmin(config, headers.authorization)
        await cache.flush()
        return { message: 'Cache cleared.' }
      },
      {
        response: { 200: Message, 401: ErrorBody, 403: ErrorBody },
        detail: {
          tags,
          summary: 'Flush the whole cache',
          description:
            'With ADMIN_TOKEN set it needs `Authorization: Bearer <ADMIN_TOKEN>`; ' +
            'in production without ADMIN_TOKEN it is refused.',
          security: [{ bearerAuth: [] }],
        },
      },
    )
}
