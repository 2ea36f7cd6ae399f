// POST /documents, GET /documents and POST /query over HTTP (spec §4 rules 1-3,
// CONTRACT §6), on the test database and a fresh cache per test.
import { describe, expect, test } from 'bun:test'
import {
  DOCUMENT_KEY_TTL_SECONDS,
  DOCUMENT_LIST_KEY,
  DOCUMENT_LIST_TTL_SECONDS,
  documentKey,
} from '../../plugins/docstore/cache-keys.ts'
import { contentSha256 } from '../../plugins/docstore/content-hash.ts'
import { suiteDb } from '../support/backend-apps.ts'
import { appBackends, resilient } from '../support/backends.ts'
import { call, countDocuments, docstoreApp, uniqueContent } from './harness.ts'

interface Created {
  id: number
  message: string
}
interface Duplicate {
  message: string
  id?: number
  cached: boolean
}
interface Listed {
  documents: { id: number; content: string; metadata: Record<string, unknown> }[]
  cached: boolean
}
interface Found {
  query: string
  results: { id: number; content: string }[]
}

for (const backend of appBackends())
  describe(backend.name, () => {
    const db = suiteDb(backend)

    const setup = () => {
      const cache = backend.cache()
      return { cache, app: docstoreApp({ db, cache }) }
    }

    describe('POST /documents', () => {
      test('stores a new document, remembers its id under doc:<sha256> for an hour', async () => {
        const { app, cache } = setup()
        const content = uniqueContent('new document')
        const reply = await call<Created>(app, 'POST', '/documents', {
          json: { content, metadata: { source: 'test', tags: ['a', 'b'], nested: { n: 1 } } },
        })
        expect(reply.status).toBe(200)
        expect(Number.isInteger(reply.body.id)).toBe(true)
        expect(reply.body.message).toBeString()
        expect(Object.keys(reply.body).sort()).toEqual(['id', 'message'])

        const key = documentKey(contentSha256(content))
        expect(await cache.get(key)).toBe(String(reply.body.id))
        const ttl = await cache.ttl(key)
        expect(ttl).toBeGreaterThan(DOCUMENT_KEY_TTL_SECONDS - 5)
        expect(ttl).toBeLessThanOrEqual(DOCUMENT_KEY_TTL_SECONDS)

        const [row] = await db.query<{ content: string; metadata: string }>(
          'SELECT content, metadata FROM documents WHERE id = $1',
          [reply.body.id],
        )
        expect(row?.content).toBe(content)
        // Stored as the JSON text of the object (the spec's "string form").
        expect(JSON.parse(row?.metadata ?? 'null')).toEqual({
          source: 'test',
          tags: ['a', 'b'],
          nested: { n: 1 },
        })
      })

      test('metadata defaults to an empty object', async () => {
        const { app } = setup()
        const reply = await call<Created>(app, 'POST', '/documents', {
          json: { content: uniqueContent('bare') },
        })
        expect(reply.status).toBe(200)
        const [row] = await db.query<{ metadata: string }>(
          'SELECT metadata FROM documents WHERE id = $1',
          [reply.body.id],
        )
        expect(row?.metadata).toBe('{}')
      })

      test('a duplicate known to the cache answers cached: true, without an id, and stores nothing', async () => {
        const { app } = setup()
        const content = uniqueContent('cached duplicate')
        await call(app, 'POST', '/documents', { json: { content } })
        const before = await countDocuments(db)
        const reply = await call<Duplicate>(app, 'POST', '/documents', {
          json: { content, metadata: { source: 'other' } },
        })
        expect(reply.status).toBe(200)
        expect(reply.body.cached).toBe(true)
        expect(reply.body).not.toHaveProperty('id')
        expect(await countDocuments(db)).toBe(before)
      })

      test('after a cache flush the database still refuses the duplicate and names the stored id', async () => {
        const { app, cache } = setup()
        const content = uniqueContent('flushed duplicate')
        const first = await call<Created>(app, 'POST', '/documents', { json: { content } })
        await cache.flush()
        const before = await countDocuments(db)
        const reply = await call<Duplicate>(app, 'POST', '/documents', { json: { content } })
        expect(reply.status).toBe(200)
        expect(reply.body).toEqual({
          message: expect.any(String),
          id: first.body.id,
          cached: false,
        })
        expect(await countDocuments(db)).toBe(before)
        // The key is remembered again, so the next duplicate is answered from the cache.
        expect(await cache.get(documentKey(contentSha256(content)))).toBe(String(first.body.id))
        const again = await call<Duplicate>(app, 'POST', '/documents', { json: { content } })
        expect(again.body.cached).toBe(true)
      })

      test('a preloaded row counts as a duplicate too (same hash in SQL and in the service)', async () => {
        const { app } = setup()
        const [preloaded] = await db.query<{ id: number; content: string }>(
          'SELECT id, content FROM documents ORDER BY id LIMIT 1',
        )
        const reply = await call<Duplicate>(app, 'POST', '/documents', {
          json: { content: preloaded?.content },
        })
        expect(reply.body).toEqual({
          message: expect.any(String),
          id: preloaded?.id,
          cached: false,
        })
      })

      test('concurrent posts of one content store it once', async () => {
        const { app } = setup()
        const content = uniqueContent('race')
        const before = await countDocuments(db)
        const replies = await Promise.all(
          Array.from({ length: 8 }, () =>
            call<Created & Duplicate>(app, 'POST', '/documents', { json: { content } }),
          ),
        )
        expect(replies.every((reply) => reply.status === 200)).toBe(true)
        expect(replies.filter((reply) => reply.body.cached === undefined)).toHaveLength(1)
        expect(await countDocuments(db)).toBe(before + 1)
      })

      test('unknown extra fields are ignored', async () => {
        const { app } = setup()
        const reply = await call<Created>(app, 'POST', '/documents', {
          json: { content: uniqueContent('extra'), extra: true },
        })
        expect(reply.status).toBe(200)
      })

      test('a document of almost 1 MB of distinct words is accepted whole', async () => {
        // Distinct words are the worst case for the full-text index (one lexeme each).
        const { app } = setup()
        const words = [uniqueContent('large')]
        for (let length = 0; length < 1_000_000; length += 8)
          words.push(
            Math.floor(Math.random() * 36 ** 7)
              .toString(36)
              .padStart(7, '0'),
          )
        const content = words.join(' ')
        const reply = await call<Created>(app, 'POST', '/documents', { json: { content } })
        expect(reply.status).toBe(200)
        const [row] = await db.query<{ n: number }>(
          'SELECT length(content) AS n FROM documents WHERE id = $1',
          [reply.body.id],
        )
        expect(row?.n).toBe(content.length)
      })
    })

    describe('GET /documents', () => {
      test('reads at most 100 rows newest first, then serves the cached copy for 60 s', async () => {
        const { app, cache } = setup()
        for (let i = 0; i < 3; i++)
          await call(app, 'POST', '/documents', { json: { content: uniqueContent(`list ${i}`) } })
        const first = await call<Listed>(app, 'GET', '/documents')
        expect(first.status).toBe(200)
        expect(first.body.cached).toBe(false)
        const ids = first.body.documents.map((doc) => doc.id)
        expect(ids.length).toBeGreaterThanOrEqual(7) // four preloaded + three here
        expect(ids.length).toBeLessThanOrEqual(100)
        expect(ids).toEqual([...ids].sort((a, b) => b - a))
        const [newest] = await db.query<{ id: number }>('SELECT max(id) AS id FROM documents')
        expect(ids[0]).toBe(newest?.id as number)

        const ttl = await cache.ttl(DOCUMENT_LIST_KEY)
        expect(ttl).toBeGreaterThan(DOCUMENT_LIST_TTL_SECONDS - 5)
        expect(ttl).toBeLessThanOrEqual(DOCUMENT_LIST_TTL_SECONDS)

        const second = await call<Listed>(app, 'GET', '/documents')
        expect(second.body).toEqual({ documents: first.body.documents, cached: true })
      })

      test('returns metadata as the object that was sent; preloaded rows carry a source', async () => {
        const { app } = setup()
        const metadata = { source: 'metadata-test', score: 0.5, flags: [true, null] }
        const created = await call<Created>(app, 'POST', '/documents', {
          json: { content: uniqueContent('metadata'), metadata },
        })
        const listed = await call<Listed>(app, 'GET', '/documents')
        expect(listed.body.documents.find((doc) => doc.id === created.body.id)?.metadata).toEqual(
          metadata,
        )
      })

      test('stops at 100 rows', async () => {
        const { app } = setup()
        const missing = 101 - (await countDocuments(db))
        for (let i = 0; i < missing; i++)
          await call(app, 'POST', '/documents', { json: { content: uniqueContent(`fill ${i}`) } })
        const listed = await call<Listed>(app, 'GET', '/documents')
        expect(listed.body.documents).toHaveLength(100)
      }, 30_000)

      test('a new document deletes documents:list, so the next read includes it', async () => {
        const { app, cache } = setup()
        await call(app, 'GET', '/documents')
        expect(await cache.get(DOCUMENT_LIST_KEY)).not.toBeNull()
        const created = await call<Created>(app, 'POST', '/documents', {
          json: { content: uniqueContent('fresh') },
        })
        expect(await cache.get(DOCUMENT_LIST_KEY)).toBeNull()
        const listed = await call<Listed>(app, 'GET', '/documents')
        expect(listed.body.cached).toBe(false)
        expect(listed.body.documents[0]?.id).toBe(created.body.id)
      })

      test('a duplicate does not invalidate the list', async () => {
        const { app, cache } = setup()
        const content = uniqueContent('dup keeps list')
        await call(app, 'POST', '/documents', { json: { content } })
        await call(app, 'GET', '/documents')
        await call(app, 'POST', '/documents', { json: { content } })
        expect(await cache.get(DOCUMENT_LIST_KEY)).not.toBeNull()
      })
    })

    describe('POST /query', () => {
      test('matches a case-insensitive substring, ascending id, default top_k 5', async () => {
        const { app } = setup()
        const marker = `Needle${crypto.randomUUID().slice(0, 8)}`
        const ids: number[] = []
        for (let i = 0; i < 7; i++) {
          const created = await call<Created>(app, 'POST', '/documents', {
            json: { content: `${i} before ${marker.toLowerCase()} after ${crypto.randomUUID()}` },
          })
          ids.push(created.body.id)
        }
        const reply = await call<Found>(app, 'POST', '/query', {
          json: { question: marker.toUpperCase() },
        })
        expect(reply.status).toBe(200)
        expect(reply.body.query).toBe(marker.toUpperCase())
        expect(reply.body.results.map((row) => row.id)).toEqual(ids.slice(0, 5))
        expect(Object.keys(reply.body.results[0] ?? {}).sort()).toEqual(['content', 'id'])

        const all = await call<Found>(app, 'POST', '/query', {
          json: { question: marker, top_k: 100 },
        })
        expect(all.body.results.map((row) => row.id)).toEqual(ids)
        const one = await call<Found>(app, 'POST', '/query', {
          json: { question: marker, top_k: 1 },
        })
        expect(one.body.results.map((row) => row.id)).toEqual(ids.slice(0, 1))
      })

      test('finds the preloaded rows', async () => {
        const { app } = setup()
        const reply = await call<Found>(app, 'POST', '/query', { json: { question: 'POSTGRESQL' } })
        expect(reply.body.results.some((row) => row.content.startsWith('PostgreSQL is'))).toBe(true)
      })

      test('no match is an empty list', async () => {
        const { app } = setup()
        const reply = await call<Found>(app, 'POST', '/query', {
          json: { question: crypto.randomUUID() },
        })
        expect(reply.body).toEqual({ query: expect.any(String), results: [] })
      })
    })

    describe('with the cache down', () => {
      test('documents are still stored, listed, and deduplicated by the database', async () => {
        const { createRedisCache } = await import('../../src/storage/redis-cache.ts')
        const deadCache = resilient(createRedisCache('redis://127.0.0.1:1'))
        try {
          const app = docstoreApp({ db, cache: deadCache })
          const content = uniqueContent('no cache')
          const created = await call<Created>(app, 'POST', '/documents', { json: { content } })
          expect(created.status).toBe(200)
          const duplicate = await call<Duplicate>(app, 'POST', '/documents', { json: { content } })
          expect(duplicate.body).toEqual({
            message: expect.any(String),
            id: created.body.id,
            cached: false,
          })
          const listed = await call<Listed>(app, 'GET', '/documents')
          expect(listed.body.cached).toBe(false)
          expect(listed.body.documents[0]?.id).toBe(created.body.id)
        } finally {
          await deadCache.close()
        }
      }, 20_000)
    })
  })
