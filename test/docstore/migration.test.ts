// The documents migration: applied exactly once, four preloaded rows with a
// JSON metadata holding a source, the unique hash and both search indexes.
import { describe, expect, test } from 'bun:test'
import { contentSha256 } from '../../plugins/docstore/content-hash.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { suiteDb } from '../support/backend-apps.ts'
import { appBackends } from '../support/backends.ts'

for (const backend of appBackends())
  describe(backend.name, () => {
    const db = suiteDb(backend)

    type PreloadedRow = {
      id: number
      content: string
      metadata: string
      content_sha256: string
    }

    const preloaded = () =>
      db.query<PreloadedRow>(
        'SELECT id, content, metadata, content_sha256 FROM documents WHERE id <= 4 ORDER BY id',
      )

    describe('002_documents', () => {
      test('is recorded and not applied again', async () => {
        const versions = await db.query<{ version: string }>(
          'SELECT version FROM schema_migrations',
        )
        expect(versions.map((row) => row.version)).toContain('002_documents')
        const before = await preloaded()
        expect(await migrate(db)).toEqual([])
        expect(await preloaded()).toEqual(before)
      })

      test('preloads four documents whose metadata is a JSON object with a source', async () => {
        const rows = await preloaded()
        expect(rows.map((row) => row.id)).toEqual([1, 2, 3, 4])
        for (const row of rows) {
          expect(row.content.length).toBeGreaterThan(20)
          const metadata: unknown = JSON.parse(row.metadata)
          expect(metadata).toMatchObject({ source: expect.any(String) })
          // The SQL digest equals the service's, so a re-post of a preloaded row is a duplicate.
          expect(row.content_sha256).toBe(contentSha256(row.content))
        }
      })

      test('has a text-search index, a trigram index and a unique content hash', async () => {
        const indexes = await db.query<{ indexname: string; indexdef: string }>(
          `SELECT indexname, indexdef FROM pg_indexes
       WHERE tablename = 'documents' AND schemaname = current_schema()`,
        )
        const definition = (name: string) =>
          indexes.find((index) => index.indexname === name)?.indexdef ?? ''
        expect(definition('documents_content_fts_idx')).toMatch(
          /gin \(to_tsvector\('english'::regconfig, "left"\(content, 100000\)\)\)/i,
        )
        expect(definition('documents_content_trgm_idx')).toMatch(
          /gin \(content (public\.)?gin_trgm_ops\)/i,
        )
        expect(definition('documents_content_sha256_key')).toMatch(/UNIQUE/i)
      })

      test('the database itself refuses a second row with the same content', async () => {
        const content = 'PostgreSQL is an open-source relational database'
        await expect(
          db.transaction(async (tx) => {
            const digest = contentSha256(`${content} ${crypto.randomUUID()}`)
            await tx.query('INSERT INTO documents (content, content_sha256) VALUES ($1, $2)', [
              content,
              digest,
            ])
            await tx.query('INSERT INTO documents (content, content_sha256) VALUES ($1, $2)', [
              content,
              digest,
            ])
          }),
        ).rejects.toThrow()
      })

      test('the text-search index answers full-text queries', async () => {
        const rows = await db.query<{ id: number }>(
          `SELECT id FROM documents
       WHERE to_tsvector('english', left(content, 100000)) @@ plainto_tsquery('english', 'databases')
         AND id <= 4
       ORDER BY id`,
        )
        expect(rows.map((row) => row.id)).toEqual([1, 2, 3])
      })
    })
  })
