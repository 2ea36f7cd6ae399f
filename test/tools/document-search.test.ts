import { beforeAll, describe, expect, test } from 'bun:test'
import { createDocumentSearch } from '../../plugins/docstore/document-search.ts'
import { insertDocument } from '../../plugins/docstore/repository.ts'
import { createFileDocumentSearch } from '../../src/files/file-document-search.ts'
import type { Db } from '../../src/storage/db.ts'
import { documentSearchSource, searchInOrder } from '../../src/tools/document-search.ts'
import { createToolCatalogue } from '../../src/tools/tool-catalogue.ts'
import { dbBackends, uniqueName } from '../support/backends.ts'

// The built-in document_search tool over the document store, on each database adapter.

const context = { userId: 'u1', signal: new AbortController().signal }

for (const backend of dbBackends()) {
  describe(`document_search (${backend.name})`, () => {
    let db: Db
    // PGlite's first open takes seconds on a busy machine.
    beforeAll(async () => {
      db = await backend.open()
    }, 60_000)

    test('finds the documents that contain the query, as JSON; bad arguments are error results', async () => {
      const mark = uniqueName('Mark')
      for (const content of [`first ${mark} 100%_literal`, `second ${mark.toLowerCase()}`, 'other'])
        await insertDocument(db, {
          content,
          metadata: '{}',
          contentSha256: new Bun.CryptoHasher('sha256').update(content).digest('hex'),
        })
      const catalogue = createToolCatalogue({
        sources: [documentSearchSource(createDocumentSearch(db))],
        timeoutMs: 10_000,
        maxOutputChars: 20_000,
      })
      const [tool] = await catalogue.list()
      expect(tool?.name).toBe('document_search')
      expect(tool?.parameters).toMatchObject({ required: ['query'] })

      const found = await catalogue.call(
        'document_search',
        JSON.stringify({ query: mark }),
        context,
      )
      expect(found.isError).toBe(false)
      const { results } = JSON.parse(found.text) as { results: { id: number; content: string }[] }
      expect(results.map((hit) => hit.content)).toEqual([
        `first ${mark} 100%_literal`,
        `second ${mark.toLowerCase()}`,
      ])
      // `%` and `_` match literally, as POST /query's do.
      const literal = await catalogue.call('document_search', '{"query":"0%_l","limit":1}', context)
      expect(JSON.parse(literal.text).results).toHaveLength(1)
      const none = await catalogue.call('document_search', '{"query":"%_%_nothing"}', context)
      expect(JSON.parse(none.text)).toEqual({ results: [] })

      for (const args of [
        '{}',
        '{"query":""}',
        '{"query":1}',
        '{"query":"a","limit":0}',
        '{"query":"a","limit":"5"}',
      ])
        expect((await catalogue.call('document_search', args, context)).isError).toBe(true)
      expect(
        (
          await catalogue.call(
            'document_search',
            JSON.stringify({ query: 'a'.repeat(1_001) }),
            context,
          )
        ).isError,
      ).toBe(true)
    })

    test("a user's attachments answer first, only their owner's, then the document store", async () => {
      const mark = uniqueName('Attached')
      const owner = uniqueName('owner')
      const other = uniqueName('other')
      const file = (id: string, user: string, text: string | null, status = 'ready') =>
        db.query(
          `INSERT INTO files (id, user_id, name, use_case, declared_size, status, text, uploaded_at)
           VALUES ($1, $2, 'notes.txt', 'my_files', 10, $3, $4, now())`,
          [id, user, status, text],
        )
      const hex = () => crypto.randomUUID().replaceAll('-', '')
      const mine = `file-${hex()}`
      await file(mine, owner, `my notes on ${mark}`)
      await file(`file-${hex()}`, other, `their notes on ${mark}`)
      await file(`file-${hex()}`, owner, `not uploaded ${mark}`, 'pending')
      const stored = `store ${mark}`
      await insertDocument(db, {
        content: stored,
        metadata: '{}',
        contentSha256: new Bun.CryptoHasher('sha256').update(stored).digest('hex'),
      })
      const catalogue = createToolCatalogue({
        sources: [
          documentSearchSource(
            searchInOrder([createFileDocumentSearch(db), createDocumentSearch(db)]),
          ),
        ],
        timeoutMs: 10_000,
        maxOutputChars: 20_000,
      })
      const search = async (userId: string, limit = 5) =>
        (
          JSON.parse(
            (
              await catalogue.call('document_search', JSON.stringify({ query: mark, limit }), {
                ...context,
                userId,
              })
            ).text,
          ) as { results: { id: string | number; content: string; metadata?: unknown }[] }
        ).results
      const found = await search(owner)
      expect(found.map((hit) => hit.content)).toEqual([`my notes on ${mark}`, stored])
      expect(found[0]).toMatchObject({
        id: mine,
        metadata: { source: 'attachment', name: 'notes.txt' },
      })
      expect((await search(other)).map((hit) => hit.content)).toEqual([
        `their notes on ${mark}`,
        stored,
      ])
      // The limit counts both: the attachment fills it.
      expect((await search(owner, 1)).map((hit) => hit.content)).toEqual([`my notes on ${mark}`])
    })
  })
}
