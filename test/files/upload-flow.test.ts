// The upload flow of CONTRACT §20 over HTTP, as gpt4free's upload_files calls
// it (its request shapes and headers), on every app backend with the folder
// store: create → PUT to the absolute, signed upload_url → uploaded →
// download, and delete; what is stored (the row with its type, size,
// dimensions and text; the bytes under the service's own keys); ownership
// (another user's file is a 404 everywhere); and hostile input - oversized,
// a lying size, a wrong type, a zip bomb, a tampered URL, a path in the name,
// malformed bodies - each a {"detail","code"} error that leaves nothing stored.
import { expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DomainError } from '../../src/errors.ts'
import { createFileService } from '../../src/files/file-service.ts'
import { createFileUrlTokens } from '../../src/files/file-url-tokens.ts'
import { createFolderFileStore } from '../../src/files/folder-file-store.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import { uniqueName } from '../support/backends.ts'
import { get, newUser, post } from '../support/conversation-app.ts'
import { pdf, png, zipBomb } from '../support/sample-files.ts'

const MAX = 64 * 1024
const QUOTA = 4 * MAX

interface Created {
  status: string
  file_id: string
  upload_url: string
}

describeEachBackend(
  { env: { FILE_MAX_BYTES: String(MAX), FILES_MAX_BYTES_PER_USER: String(QUOTA) } },
  (t) => {
    const as = (user: string) => ({ 'x-user-id': user })

    /** gpt4free's create: file_name, file_size, use_case (and a few fields it adds). */
    const create = (user: string, name: string, size: number, useCase = 'my_files') =>
      post(
        t.app,
        '/backend-api/files',
        {
          file_name: name,
          file_size: size,
          use_case: useCase,
          timezone_offset_min: -120,
          reset_rate_limits: false,
        },
        as(user),
      )

    /** gpt4free's PUT: no identity, Azure's blob headers, the type it guessed. */
    const put = (url: string, bytes: Uint8Array, type = 'application/octet-stream') =>
      t.app.handle(
        new Request(url, {
          method: 'PUT',
          body: bytes,
          headers: {
            'content-type': type,
            'x-ms-blob-type': 'BlockBlob',
            'x-ms-version': '2020-04-08',
            origin: 'https://chatgpt.com',
          },
        }),
      )

    const uploaded = (user: string, id: string) =>
      post(t.app, `/backend-api/files/${id}/uploaded`, {}, as(user))

    const download = (user: string, id: string) =>
      get(t.app, `/backend-api/files/${id}/download`, as(user))

    const remove = (user: string, id: string) =>
      t.app.handle(
        new Request(`http://localhost/backend-api/files/${id}`, {
          method: 'DELETE',
          headers: as(user),
        }),
      )

    /** The whole flow up to uploaded; the uploaded response. */
    const upload = async (user: string, name: string, bytes: Uint8Array, declared?: number) => {
      const created = await create(user, name, declared ?? bytes.byteLength)
      expect(created.status).toBe(200)
      const { file_id, upload_url } = (await created.json()) as Created
      expect((await put(upload_url, bytes)).status).toBe(201)
      return { id: file_id, response: await uploaded(user, file_id) }
    }

    const rowsOf = (user: string) =>
      t.db.query<Record<string, unknown>>(
        `SELECT id, name, status, size_bytes::int AS size, mime_type, width, height, text
         FROM files WHERE user_id = $1 ORDER BY created_at`,
        [user],
      )

    /** The keys the folder store holds, as paths under FILES_DIR. */
    const storedKeys = () => {
      try {
        return readdirSync(t.config.files.dir, { recursive: true })
          .map(String)
          .filter((path) => /file-[0-9a-f]{32}$/.test(path))
      } catch {
        return []
      }
    }

    const expectError = async (response: Response, status: number, code?: string) => {
      expect(response.status).toBe(status)
      const body = (await response.json()) as { detail: unknown; code: unknown }
      expect(typeof body.detail).toBe('string')
      if (code) expect(body.code).toBe(code)
      else expect(typeof body.code).toBe('string')
      return body as { detail: string; code: string }
    }

    test('an image, the way gpt4free uploads it: absolute URLs, its headers, the bytes served with their type', async () => {
      const user = newUser()
      const image = png(3, 2)
      const created = await create(user, 'photo.png', image.byteLength, 'multimodal')
      expect(created.status).toBe(200)
      const body = (await created.json()) as Created
      expect(body.status).toBe('success')
      expect(body.file_id).toMatch(/^file-[0-9a-f]{32}$/)
      expect(new URL(body.upload_url).origin).toBe('http://localhost')

      const putResponse = await put(body.upload_url, image, 'image/png')
      expect(putResponse.status).toBe(201)

      const done = await uploaded(user, body.file_id)
      expect(done.status).toBe(200)
      const { status, download_url } = (await done.json()) as {
        status: string
        download_url: string
      }
      expect(status).toBe('success')
      expect(new URL(download_url).origin).toBe('http://localhost')

      const info = await download(user, body.file_id)
      expect(info.status).toBe(200)
      expect(await info.json()).toMatchObject({
        status: 'success',
        file_name: 'photo.png',
        mime_type: 'image/png',
        size_bytes: image.byteLength,
      })
      const served = await t.app.handle(new Request(download_url))
      expect(served.status).toBe(200)
      expect(served.headers.get('content-type')).toBe('image/png')
      expect(Buffer.from(await served.arrayBuffer())).toEqual(Buffer.from(image))

      expect(await rowsOf(user)).toEqual([
        {
          id: body.file_id,
          name: 'photo.png',
          status: 'ready',
          size: image.byteLength,
          mime_type: 'image/png',
          width: 3,
          height: 2,
          text: null,
        },
      ])
      // The checked bytes are kept apart from the upload, which is gone.
      expect(storedKeys()).toEqual([`files/${body.file_id}`])
    })

    test('documents keep their text: Markdown and CSV as UTF-8, a PDF through its extractor; the type comes from the bytes', async () => {
      const user = newUser()
      const markdown = new TextEncoder().encode('\uFEFF# Plan\n\n- ünïcode ✓\n')
      const csv = new TextEncoder().encode('a,b\n1,2\n')
      const md = await upload(user, 'plan.md', markdown)
      const table = await upload(user, 'data.csv', csv)
      // Named .png, but PDF bytes: the bytes decide.
      const paper = await upload(user, 'paper.png', pdf('Quarterly report zebra'))
      for (const file of [md, table, paper]) expect(file.response.status).toBe(200)
      const rows = await rowsOf(user)
      expect(rows.map((row) => [row.mime_type, row.text])).toEqual([
        ['text/markdown', '# Plan\n\n- ünïcode ✓\n'],
        ['text/csv', 'a,b\n1,2\n'],
        ['application/pdf', 'Quarterly report zebra'],
      ])
      const served = await t.app.handle(
        new Request(
          ((await (await download(user, md.id)).json()) as { download_url: string }).download_url,
        ),
      )
      expect(served.headers.get('content-type')).toBe('text/markdown; charset=utf-8')
      expect(served.headers.get('x-content-type-options')).toBe('nosniff')
    })

    test('delete removes the bytes and the text; the file is then gone on every route', async () => {
      const user = newUser()
      const { id } = await upload(user, 'notes.txt', new TextEncoder().encode('secret words'))
      const { download_url } = (await (await download(user, id)).json()) as { download_url: string }
      const deleted = await remove(user, id)
      expect(deleted.status).toBe(200)
      expect(await rowsOf(user)).toEqual([])
      expect(storedKeys().filter((key) => key.includes(id))).toEqual([])
      await expectError(await download(user, id), 404, 'not_found')
      await expectError(await uploaded(user, id), 404, 'not_found')
      await expectError(await remove(user, id), 404, 'not_found')
      expect((await t.app.handle(new Request(download_url))).status).toBe(404)
    })

    test("another user's file id is a 404 on every route, and changes nothing", async () => {
      const owner = newUser()
      const other = newUser()
      const { id } = await upload(owner, 'a.txt', new TextEncoder().encode('mine'))
      const pending = (await (await create(owner, 'b.txt', 4)).json()) as Created
      for (const fileId of [id, pending.file_id]) {
        await expectError(await uploaded(other, fileId), 404, 'not_found')
        await expectError(await download(other, fileId), 404, 'not_found')
        await expectError(await remove(other, fileId), 404, 'not_found')
      }
      expect((await rowsOf(owner)).map((row) => row.status)).toEqual(['ready', 'pending'])
      // Ids that are not ours at all, and hostile ones, are the same 404.
      for (const fileId of ['file-0', 'nope', '..%2F..%2Fetc', `${id}x`])
        await expectError(await download(owner, fileId), 404, 'not_found')
    })

    test('a file over FILE_MAX_BYTES is a 413 when declared, and a PUT larger than declared is a 413; nothing is stored', async () => {
      const user = newUser()
      const tooBig = await expectError(
        await create(user, 'big.txt', MAX + 1),
        413,
        'file_too_large',
      )
      expect(tooBig.detail).toContain('FILE_MAX_BYTES')
      // A lying file_size: declared 10, sent 11.
      const created = (await (await create(user, 'liar.txt', 10)).json()) as Created
      await expectError(await put(created.upload_url, new Uint8Array(11).fill(65)), 413)
      expect(storedKeys().filter((key) => key.includes(created.file_id))).toEqual([])
      await expectError(await uploaded(user, created.file_id), 409, 'conflict')
      // Declared larger than sent: the real size is what counts.
      const honest = await upload(user, 'small.txt', new TextEncoder().encode('abc'), 1000)
      expect(honest.response.status).toBe(200)
      const rows = await rowsOf(user)
      expect(rows.map((row) => [row.name, row.status, row.size])).toEqual([
        ['liar.txt', 'pending', null],
        ['small.txt', 'ready', 3],
      ])
    })

    test('a type the service cannot use is a 415 at uploaded, and the file is gone: a zip bomb is never unpacked', async () => {
      const user = newUser()
      const bomb = zipBomb(50)
      expect(bomb.byteLength).toBeLessThan(MAX)
      const refused = [
        await upload(user, 'bomb.txt', bomb),
        // A Windows executable's header.
        await upload(
          user,
          'tool.exe',
          new Uint8Array([
            77,
            90,
            144,
            0,
            3,
            0,
            0,
            0,
            4,
            0,
            0,
            0,
            255,
            255,
            0,
            0,
            ...new Uint8Array(200),
          ]),
        ),
        // Bytes that are neither a known format nor UTF-8 text.
        await upload(user, 'noise.txt', new Uint8Array([0xff, 0xfe, 0x00, 0x81, 0x13, 0x37])),
      ]
      for (const { response } of refused) {
        const body = await expectError(response, 415, 'unsupported_media_type')
        expect(body.detail).toContain('cannot be used')
      }
      expect(await rowsOf(user)).toEqual([])
      for (const { id } of refused)
        expect(storedKeys().filter((key) => key.includes(id))).toEqual([])
    })

    test('a damaged image or PDF is a 422 that stores nothing', async () => {
      const user = newUser()
      const brokenPng = png(3, 2).slice(0, 20)
      const brokenPdf = new TextEncoder().encode('%PDF-1.4\n%garbage with no objects at all\n')
      for (const [name, bytes] of [
        ['broken.png', brokenPng],
        ['broken.pdf', brokenPdf],
      ] as const) {
        const { response } = await upload(user, name, bytes)
        await expectError(response, 422, 'file_unreadable')
      }
      expect(await rowsOf(user)).toEqual([])
    })

    test('FILES_MAX_BYTES_PER_USER: past the quota a create is a 413 naming it; deleting makes room', async () => {
      const user = newUser()
      const first = (await (await create(user, 'a.txt', MAX)).json()) as Created
      for (let i = 0; i < 3; i++) expect((await create(user, `f${i}.txt`, MAX)).status).toBe(200)
      const over = await expectError(await create(user, 'g.txt', 1), 413, 'file_quota_exceeded')
      expect(over.detail).toContain('FILES_MAX_BYTES_PER_USER')
      expect((await rowsOf(user)).length).toBe(4)
      // Another user has a quota of their own.
      expect((await create(newUser(), 'h.txt', MAX)).status).toBe(200)
      expect((await remove(user, first.file_id)).status).toBe(200)
      expect((await create(user, 'g.txt', 1)).status).toBe(200)
    })

    test('creates at once cannot pass the quota together', async () => {
      const user = newUser()
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => create(user, `c${i}.txt`, MAX)),
      )
      const statuses = answers.map((response) => response.status).sort()
      expect(statuses).toEqual([200, 200, 200, 200, 413, 413, 413, 413])
      expect((await rowsOf(user)).length).toBe(4)
    })

    test('a tampered or cross-file upload URL is a 401 and stores nothing', async () => {
      const user = newUser()
      const a = (await (await create(user, 'a.txt', 5)).json()) as Created
      const b = (await (await create(user, 'b.txt', 5)).json()) as Created
      const sig = new URL(a.upload_url).searchParams.get('sig') ?? ''
      const [header, payload, signature] = sig.split('.')
      const claims = JSON.parse(Buffer.from(payload ?? '', 'base64url').toString())
      const forged = Buffer.from(
        JSON.stringify({ ...claims, k: `uploads/${b.file_id}`, n: MAX }),
      ).toString('base64url')
      const base = 'http://localhost/files/blob'
      for (const url of [
        `${base}?sig=${header}.${forged}.${signature}`,
        `${base}?sig=${sig.slice(0, -3)}abc`,
        `${base}?sig=`,
        base,
      ])
        await expectError(await put(url, new TextEncoder().encode('hello')), 401, 'unauthorized')
      // A download URL does not take an upload.
      const { id } = await upload(user, 'c.txt', new TextEncoder().encode('c'))
      const { download_url } = (await (await download(user, id)).json()) as { download_url: string }
      await expectError(await put(download_url, new TextEncoder().encode('x')), 401)
      expect(storedKeys().filter((key) => key.startsWith('uploads/'))).toEqual([])
    })

    test('a name with path separators is only a name: the bytes go under the service’s own key', async () => {
      const user = newUser()
      const name = '../../../etc/passwd\\..\\boot.ini'
      const { id, response } = await upload(user, name, new TextEncoder().encode('root:x:0:0'))
      expect(response.status).toBe(200)
      expect(((await (await download(user, id)).json()) as { file_name: string }).file_name).toBe(
        name,
      )
      expect(storedKeys().filter((key) => key.includes(id))).toEqual([`files/${id}`])
    })

    test('uploaded before the bytes came is a 409 that keeps the file pending; after the PUT it succeeds', async () => {
      const user = newUser()
      const created = (await (await create(user, 'later.txt', 5)).json()) as Created
      await expectError(await uploaded(user, created.file_id), 409, 'conflict')
      await expectError(await download(user, created.file_id), 409, 'conflict')
      expect((await put(created.upload_url, new TextEncoder().encode('later'))).status).toBe(201)
      expect((await uploaded(user, created.file_id)).status).toBe(200)
      // Saying it again is harmless.
      expect((await uploaded(user, created.file_id)).status).toBe(200)
      expect((await rowsOf(user)).map((row) => [row.status, row.text])).toEqual([
        ['ready', 'later'],
      ])
    })

    test('malformed create bodies are 422s naming the field, and no identity is a 401; nothing is stored', async () => {
      const user = newUser()
      const bodies: [unknown, string][] = [
        [{ file_size: 5 }, 'file_name'],
        [{ file_name: 'a.txt' }, 'file_size'],
        [{ file_name: 'a.txt', file_size: 'five' }, 'file_size'],
        [{ file_name: 'a.txt', file_size: 1.5 }, 'file_size'],
        [{ file_name: 'a.txt', file_size: -1 }, 'file_size'],
        [{ file_name: 'a.txt', file_size: 0 }, 'file_size'],
        [{ file_name: '', file_size: 5 }, 'file_name'],
        [{ file_name: 'x'.repeat(256), file_size: 5 }, 'file_name'],
        [{ file_name: 'a.txt', file_size: 5, use_case: 'u'.repeat(65) }, 'use_case'],
        [{ file_name: 'a\u0000.txt', file_size: 5 }, 'file_name'],
      ]
      for (const [body, field] of bodies) {
        const response = await post(t.app, '/backend-api/files', body, as(user))
        const error = await expectError(response, 422)
        expect(error.detail).toContain(field)
      }
      await expectError(await post(t.app, '/backend-api/files', '{"file_name":', as(user)), 422)
      await expectError(
        await post(t.app, '/backend-api/files', { file_name: 'a', file_size: 1 }),
        401,
      )
      // A size no JSON number can hold exactly is still just too large.
      await expectError(await create(user, 'huge.txt', 1e300), 413, 'file_too_large')
      expect(await rowsOf(user)).toEqual([])
    })

    test("a message's files resolve for their owner only: images with their bytes, documents with their text; another user's or a pending file is a 404", async () => {
      const owner = newUser()
      const image = png(3, 2)
      const photo = await upload(owner, 'photo.png', image)
      const notes = await upload(owner, 'notes.md', new TextEncoder().encode('# Notes'))
      const resolved = await t.files.resolveAttachments(owner, [photo.id, notes.id])
      expect(resolved.map(({ bytes, ...file }) => [file, bytes && Buffer.from(bytes)])).toEqual([
        [
          { id: photo.id, name: 'photo.png', mimeType: 'image/png', text: null },
          Buffer.from(image),
        ],
        [{ id: notes.id, name: 'notes.md', mimeType: 'text/markdown', text: '# Notes' }, undefined],
      ])
      const pending = (await (await create(owner, 'later.txt', 5)).json()) as Created
      for (const [user, ids] of [
        [newUser(), [photo.id]],
        [owner, [photo.id, pending.file_id]],
        [owner, ['file-00000000000000000000000000000000']],
        [owner, ['../etc/passwd']],
      ] as const) {
        const refused = await t.files.resolveAttachments(user, ids).catch((error) => error)
        expect(refused).toBeInstanceOf(DomainError)
        expect(refused).toMatchObject({ kind: 'not_found' })
      }
    })

    test('a PDF whose text is not out by the deadline is a 422, and the worker is stopped; nothing is stored', async () => {
      const dir = join(tmpdir(), uniqueName('conduit-files'))
      const store = createFolderFileStore({ dir, tokens: createFileUrlTokens('deadline-secret') })
      // A deadline no extraction meets (a worker does not even start within it):
      // as for a PDF built never to finish parsing.
      const files = createFileService({
        db: t.db,
        store,
        maxBytes: MAX,
        maxBytesPerUser: QUOTA,
        pdfTimeoutMs: 1,
      })
      const user = newUser()
      const bytes = pdf('Slow to read')
      const { file_id, upload_url } = await files.create(
        user,
        { fileName: 'slow.pdf', fileSize: bytes.byteLength, useCase: 'my_files' },
        'http://localhost',
      )
      await store.receive(
        new URL(upload_url).searchParams.get('sig') ?? '',
        new Response(bytes).body,
      )
      const refused = await files.uploaded(user, file_id, 'http://localhost').catch((e) => e)
      expect(refused).toBeInstanceOf(DomainError)
      expect(refused).toMatchObject({ kind: 'invalid', code: 'file_unreadable' })
      expect((refused as DomainError).detail).toContain('longer than 1 ms')
      expect(await rowsOf(user)).toEqual([])
      expect(await store.read(`uploads/${file_id}`)).toBeUndefined()
      expect(await store.read(`files/${file_id}`)).toBeUndefined()
    })
  },
)
