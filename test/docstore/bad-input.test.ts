// Every refused input of the document store: a §3 error body naming the field,
// nothing stored, no cache key changed (CONTRACT §3).
import { beforeAll, describe, expect, test } from 'bun:test'
import { DOCUMENT_LIST_KEY, documentKey } from '../../plugins/docstore/cache-keys.ts'
import { contentSha256 } from '../../plugins/docstore/content-hash.ts'
import type { Cache } from '../../src/storage/cache.ts'
import { suiteDb } from '../support/backend-apps.ts'
import { appBackends } from '../support/backends.ts'
import { type CallOptions, call, countDocuments, docstoreApp, type ErrorReply } from './harness.ts'

for (const backend of appBackends())
  describe(backend.name, () => {
    const db = suiteDb(backend)

    const SENTINEL = '["sentinel list"]'
    const PROBE_CONTENT = 'content of a refused request'

    /** Sends a request that must be refused, and checks that nothing changed. */
    async function expectRefused(
      path: string,
      options: CallOptions,
      status: number,
      detail: RegExp,
    ): Promise<ErrorReply> {
      const cache: Cache = backend.cache()
      const app = docstoreApp({ db, cache })
      await cache.set(DOCUMENT_LIST_KEY, SENTINEL, 60)
      const before = await countDocuments(db)
      const reply = await call<ErrorReply>(app, 'POST', path, options)
      expect(reply.status).toBe(status)
      expect(Object.keys(reply.body).sort()).toEqual(['code', 'detail'])
      expect(reply.body.detail).toMatch(detail)
      expect(await countDocuments(db)).toBe(before)
      expect(await cache.get(DOCUMENT_LIST_KEY)).toBe(SENTINEL)
      expect(await cache.get(documentKey(contentSha256(PROBE_CONTENT)))).toBeNull()
      return reply.body
    }

    describe('POST /documents refuses', () => {
      test('empty content', async () => {
        await expectRefused('/documents', { json: { content: '' } }, 422, /"content"/)
      })

      test.each([
        ['a number', 42],
        ['null', null],
        ['an array', [PROBE_CONTENT]],
        ['an object', { text: PROBE_CONTENT }],
        ['a boolean', true],
      ])('content that is %s', async (_, content) => {
        await expectRefused('/documents', { json: { content } }, 422, /"content"/)
      })

      test('missing content', async () => {
        const body = await expectRefused(
          '/documents',
          { json: { metadata: { source: 'x' } } },
          422,
          /"content"/,
        )
        expect(body.detail).toMatch(/required/)
      })

      test.each([
        ['a string', 'source=x'],
        ['an array', [{ source: 'x' }]],
        ['null', null],
        ['a number', 7],
        ['a boolean', false],
      ])('metadata that is %s', async (_, metadata) => {
        const body = await expectRefused(
          '/documents',
          { json: { content: PROBE_CONTENT, metadata } },
          422,
          /"metadata"/,
        )
        expect(body.code).toBe('validation_error')
      })

      test('a body over 1 MB', async () => {
        const body = await expectRefused(
          '/documents',
          { json: { content: `${PROBE_CONTENT}${'x'.repeat(1024 * 1024)}` } },
          413,
          /1 MB/,
        )
        expect(body.code).toBe('payload_too_large')
      })

      test('a body that is not JSON', async () => {
        await expectRefused('/documents', { raw: '{"content": "unterminated' }, 422, /JSON/)
      })

      test('a JSON body that is not an object', async () => {
        await expectRefused('/documents', { json: [PROBE_CONTENT] }, 422, /"(body|content)"/)
        await expectRefused('/documents', { json: PROBE_CONTENT }, 422, /"(body|content)"/)
      })

      test('no body at all', async () => {
        await expectRefused('/documents', {}, 422, /./)
      })
    })

    describe('POST /query refuses', () => {
      test('a missing question', async () => {
        const body = await expectRefused('/query', { json: { top_k: 3 } }, 422, /"question"/)
        expect(body.detail).toMatch(/required/)
      })

      test.each([
        ['empty', ''],
        ['a number', 5],
        ['null', null],
        ['an array', ['cache']],
      ])('a question that is %s', async (_, question) => {
        await expectRefused('/query', { json: { question } }, 422, /"question"/)
      })

      test.each([
        ['0', 0],
        ['negative', -1],
        ['not an integer', 2.5],
        ['over 100', 101],
        ['a numeric string', '3'],
        ['null', null],
      ])('top_k %s', async (_, topK) => {
        await expectRefused('/query', { json: { question: 'cache', top_k: topK } }, 422, /"top_k"/)
      })

      test('a body over 1 MB', async () => {
        await expectRefused(
          '/query',
          { json: { question: 'q'.repeat(1024 * 1024 + 1) } },
          413,
          /1 MB/,
        )
      })
    })

    describe('POST /query treats SQL and LIKE metacharacters literally', () => {
      const marker = crypto.randomUUID().slice(0, 8)
      const contents = {
        percent: `${marker} sale: 50% off`,
        plain: `${marker} sale: 50 off`,
        underscore: `${marker} file_name.txt`,
        noUnderscore: `${marker} fileXname.txt`,
        backslash: `${marker} path C:\\temp\\logs`,
        quote: `${marker} it's '; DROP TABLE documents; --`,
      }
      const ids: Record<string, number> = {}

      beforeAll(async () => {
        const app = docstoreApp({ db, cache: backend.cache() })
        for (const [name, content] of Object.entries(contents)) {
          const reply = await call<{ id: number }>(app, 'POST', '/documents', { json: { content } })
          ids[name] = reply.body.id
        }
      })

      const found = async (question: string) => {
        const app = docstoreApp({ db, cache: backend.cache() })
        const reply = await call<{ results: { id: number }[] }>(app, 'POST', '/query', {
          json: { question, top_k: 100 },
        })
        expect(reply.status).toBe(200)
        return reply.body.results.map((row) => row.id)
      }

      test('% matches only a percent sign', async () => {
        expect(await found(`${marker} sale: 50%`)).toEqual([ids.percent as number])
        expect(await found('%')).not.toContain(ids.plain as number)
      })

      test('_ matches only an underscore', async () => {
        expect(await found(`${marker} file_name`)).toEqual([ids.underscore as number])
      })

      test('\\ matches only a backslash', async () => {
        expect(await found('C:\\TEMP\\')).toEqual([ids.backslash as number])
        expect(await found(`${marker} path C:\\`)).toEqual([ids.backslash as number])
      })

      test('quotes and SQL text are plain text', async () => {
        const before = await countDocuments(db)
        expect(await found("'; DROP TABLE documents; --")).toEqual([ids.quote as number])
        expect(await countDocuments(db)).toBe(before)
      })
    })
  })
