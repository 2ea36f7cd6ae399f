// Sends that carry attachments (CONTRACT §20), end to end on every app
// backend, with the request shapes of gpt4free (upload_files, then
// create_messages: image parts without their content_type, metadata.attachments):
// what reaches an OpenAI-compatible model (a fake server that records it:
// image_url data URLs, documents' text) and the local model; what is stored
// and echoed (the input_message item, the detail, the export, an import);
// refusals before anything is stored (another user's, unknown or pending
// files: 404; images to a model without vision, bad parts: 422); retries; a
// file that cannot be read mid-turn (an error item, not a hang).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationIdOf,
  dataOf,
  type Frame,
  get,
  newUser,
  post,
  sendAndRead,
} from '../support/conversation-app.ts'
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.ts'
import { png } from '../support/sample-files.ts'
import { storedCounts } from '../support/stored-counts.ts'
import { detailOf, exported, imported, listedIds } from '../support/transfer.ts'

let fake: FakeOpenAi

beforeAll(async () => {
  fake = await startFakeOpenAi('slow', { chunkDelayMs: 1 })
}, 30_000)

afterAll(async () => {
  await fake?.stop()
})

const catalogue = () =>
  JSON.stringify([
    { slug: 'local-echo', provider: 'local', default: true },
    {
      slug: 'eyes',
      provider: 'openai',
      model: 'vision-model',
      base_url: fake.baseUrl,
      vision: true,
    },
    { slug: 'reader', provider: 'openai', model: 'text-model', base_url: fake.baseUrl },
  ])

interface Uploaded {
  file_id: string
  file_name: string
  file_size: number
  mime_type: string
  width?: number
  height?: number
}

/** An OpenAI-shaped content part, as the fake recorded it. */
type Part = { type: string; text?: string; image_url?: { url: string } }

describeEachBackend(
  () => ({ env: { MODELS: catalogue() } }),
  (t) => {
    afterAll(async () => {
      await t?.conversations.whenIdle()
    })
    const as = (user: string) => ({ 'x-user-id': user })

    /** gpt4free's upload_files: create, PUT to the absolute upload_url, uploaded, then download's answer. */
    async function upload(user: string, name: string, bytes: Uint8Array): Promise<Uploaded> {
      const created = await post(
        t.app,
        '/backend-api/files',
        { file_name: name, file_size: bytes.byteLength, use_case: 'multimodal' },
        as(user),
      )
      expect(created.status).toBe(200)
      const { file_id, upload_url } = (await created.json()) as {
        file_id: string
        upload_url: string
      }
      const put = await t.app.handle(
        new Request(upload_url, {
          method: 'PUT',
          body: bytes,
          headers: { 'x-ms-blob-type': 'BlockBlob', 'x-ms-version': '2020-04-08' },
        }),
      )
      expect(put.status).toBe(201)
      expect(
        (await post(t.app, `/backend-api/files/${file_id}/uploaded`, {}, as(user))).status,
      ).toBe(200)
      const info = (await (
        await get(t.app, `/backend-api/files/${file_id}/download`, as(user))
      ).json()) as {
        mime_type: string
        size_bytes: number
        width?: number
        height?: number
      }
      return {
        file_id,
        file_name: name,
        file_size: info.size_bytes,
        mime_type: info.mime_type,
        ...(info.width === undefined ? {} : { width: info.width, height: info.height }),
      }
    }

    /** gpt4free's create_messages: every file as an image part (no content_type), then the text. */
    const gpt4freeMessage = (text: string, files: Uploaded[], id = crypto.randomUUID()) => ({
      id,
      author: { role: 'user' },
      content: {
        content_type: 'multimodal_text',
        parts: [
          ...files.map((file) => ({
            asset_pointer: `file-service://${file.file_id}`,
            height: file.height ?? null,
            size_bytes: file.file_size,
            width: file.width ?? null,
          })),
          text,
        ],
      },
      metadata: {
        attachments: files.map((file) => ({
          height: file.height ?? null,
          id: file.file_id,
          mimeType: file.mime_type,
          name: file.file_name,
          size: file.file_size,
          width: file.width ?? null,
        })),
        serialization_metadata: { custom_symbol_offsets: [] },
      },
      create_time: Date.now() / 1000,
    })

    const sendAs = (user: string, body: Record<string, unknown>) =>
      sendAndRead(t.app, { user_id: user, ...body })

    const inputMessageOf = (frames: Frame[]) =>
      dataOf<{ input_message: { content: unknown; metadata: unknown } }>(
        frames.find((frame) => frame.data.includes('"type":"input_message"')),
      ).input_message

    const replyTextOf = (frames: Frame[]) =>
      frames
        .filter((frame) => frame.data.includes('"/message/content/parts/0"'))
        .map((frame) => dataOf<{ v: [{ v: string }] }>(frame).v[0].v)
        .join('')

    /** The one streamed request the fake got whose user text holds mark, as the fake recorded it. */
    async function requestWith(mark: string) {
      const found = (await fake.requests()).filter(
        (request) => request.body.stream === true && JSON.stringify(request.body).includes(mark),
      )
      expect(found).toHaveLength(1)
      return found[0]?.body as unknown as {
        model: string
        messages: { role: string; content: string | Part[] }[]
      }
    }

    const mark = () => `mark${crypto.randomUUID().slice(0, 8)}`

    test('gpt4free: an image uploaded then sent reaches a vision model as an image_url part; stream, detail, export and import keep it', async () => {
      const user = newUser()
      const image = png(3, 2)
      const file = await upload(user, 'photo.png', image)
      expect(file).toMatchObject({ mime_type: 'image/png', width: 3, height: 2 })
      const text = `What is in this picture ${mark()}`
      const message = gpt4freeMessage(text, [file])
      const sent = await sendAs(user, { model: 'eyes', messages: [message] })
      expect(sent.response.status).toBe(200)
      expect(sent.text).toContain('data: [DONE]')
      expect(sent.text).not.toContain('"type":"error"')

      // Stored and echoed as chatgpt.com keeps it: the image part with its content_type.
      const pointer = {
        content_type: 'image_asset_pointer',
        asset_pointer: `file-service://${file.file_id}`,
        size_bytes: image.byteLength,
        width: 3,
        height: 2,
      }
      const content = { content_type: 'multimodal_text', parts: [pointer, text] }
      const attachments = [
        {
          id: file.file_id,
          name: 'photo.png',
          mimeType: 'image/png',
          size: image.byteLength,
          width: 3,
          height: 2,
        },
      ]
      expect(inputMessageOf(sent.frames)).toMatchObject({ content, metadata: { attachments } })

      const request = await requestWith(text)
      expect(request.model).toBe('vision-model')
      const user0 = request.messages.find((m) => m.role === 'user')
      expect(user0?.content).toEqual([
        {
          type: 'image_url',
          image_url: { url: `data:image/png;base64,${Buffer.from(image).toString('base64')}` },
        },
        { type: 'text', text },
      ])

      const cid = conversationIdOf(sent.frames)
      const detail = await detailOf(t.app, user, cid)
      const stored = detail.mapping[message.id]?.message
      expect(stored?.content).toEqual(content)
      expect(stored?.metadata).toEqual({ attachments })

      const [exportedOne] = (await exported(t.app, user)).filter((c) => c.id === cid)
      expect(exportedOne?.mapping[message.id]?.message?.content).toEqual(content)
      expect(exportedOne?.mapping[message.id]?.message?.metadata).toEqual({ attachments })

      const other = newUser()
      const report = await imported(t.app, other, JSON.stringify([exportedOne]))
      expect(report).toEqual({ imported: 1, skipped: [] })
      // Its id is taken (by the first user): the import gives it a new one.
      const [importedId] = await listedIds(t.app, other)
      const again = await detailOf(t.app, other, importedId as string)
      expect(again.mapping[message.id]?.message?.content).toEqual(content)
      expect(again.mapping[message.id]?.message?.metadata).toEqual({ attachments })

      // Search reads the text parts, never a pointer.
      const search = async (q: string) =>
        (
          (await (
            await get(t.app, `/backend-api/conversations/search?query=${q}`, as(user))
          ).json()) as { items: unknown[] }
        ).items.length
      expect(await search(encodeURIComponent(text.split(' ').at(-1) as string))).toBe(1)
      expect(await search(encodeURIComponent(file.file_id))).toBe(0)
    })

    test('documents: a text model gets their text after the message (gpt4free shape and a text message listing them); the local model reads it too', async () => {
      const user = newUser()
      const notes = await upload(user, 'notes.md', new TextEncoder().encode('# Plan\nBuy apples.'))
      const csv = await upload(user, 'data.csv', new TextEncoder().encode('a,b\n1,2\n'))
      const first = `Summarise these ${mark()}`
      const sent = await sendAs(user, {
        model: 'reader',
        messages: [gpt4freeMessage(first, [notes])],
      })
      expect(sent.response.status).toBe(200)
      expect(sent.text).not.toContain('"type":"error"')
      const request = await requestWith(first)
      expect(request.messages.find((m) => m.role === 'user')?.content).toEqual([
        { type: 'text', text: first },
        { type: 'text', text: 'Attached document "notes.md":\n\n# Plan\nBuy apples.' },
      ])

      // chatgpt.com's way for documents: a text message whose metadata lists them.
      const second = `And this one ${mark()}`
      const next = await sendAs(user, {
        conversation_id: conversationIdOf(sent.frames),
        model: 'reader',
        messages: [
          {
            author: { role: 'user' },
            content: { content_type: 'text', parts: [second] },
            metadata: { attachments: [{ id: csv.file_id, name: 'data.csv' }] },
          },
        ],
      })
      expect(next.response.status).toBe(200)
      const later = await requestWith(second)
      const users = later.messages.filter((m) => m.role === 'user')
      // The earlier message keeps its document in the context; the new one has its own.
      expect(users.map((m) => m.content)).toEqual([
        [
          { type: 'text', text: first },
          { type: 'text', text: 'Attached document "notes.md":\n\n# Plan\nBuy apples.' },
        ],
        [
          { type: 'text', text: second },
          { type: 'text', text: 'Attached document "data.csv":\n\na,b\n1,2\n' },
        ],
      ])

      const local = await sendAs(user, {
        messages: [gpt4freeMessage('Read:', [notes])],
      })
      expect(local.response.status).toBe(200)
      expect(replyTextOf(local.frames)).toContain(
        'Read: Attached document "notes.md": # Plan Buy apples.',
      )
    })

    test('refused before anything is stored: another user’s, an unknown and a pending file (404); an image to a model without vision (422 naming it)', async () => {
      const user = newUser()
      const owner = newUser()
      const theirs = await upload(owner, 'theirs.png', png(2, 2))
      const mine = await upload(user, 'mine.png', png(2, 2))
      const pending = (await (
        await post(
          t.app,
          '/backend-api/files',
          { file_name: 'p.txt', file_size: 3, use_case: 'my_files' },
          as(user),
        )
      ).json()) as { file_id: string }
      const before = await storedCounts(t.db)
      const expectRefused = async (
        body: Record<string, unknown>,
        status: number,
        detail: RegExp,
      ) => {
        const { response, text } = await sendAs(user, body)
        expect(response.status).toBe(status)
        const error = JSON.parse(text) as { detail: string; code: string }
        expect(error.detail).toMatch(detail)
        expect(typeof error.code).toBe('string')
        return error
      }
      await expectRefused(
        { model: 'eyes', messages: [gpt4freeMessage('x', [theirs])] },
        404,
        new RegExp(theirs.file_id),
      )
      await expectRefused(
        {
          model: 'eyes',
          messages: [
            gpt4freeMessage('x', [{ ...mine, file_id: 'file-0123456789abcdef0123456789abcdef' }]),
          ],
        },
        404,
        /File not found/,
      )
      await expectRefused(
        {
          model: 'eyes',
          messages: [gpt4freeMessage('x', [{ ...mine, file_id: pending.file_id }])],
        },
        404,
        /File not found/,
      )
      const noVision = await expectRefused(
        { model: 'reader', messages: [gpt4freeMessage('x', [mine])] },
        422,
        /"reader"/,
      )
      expect(noVision.code).toBe('model_without_vision')
      await expectRefused({ messages: [gpt4freeMessage('x', [mine])] }, 422, /"local-echo"/)
      expect(await storedCounts(t.db)).toEqual(before)

      // Into an existing conversation too.
      const ok = await sendAs(user, { model: 'eyes', messages: [gpt4freeMessage('fine', [mine])] })
      expect(ok.response.status).toBe(200)
      const cid = conversationIdOf(ok.frames)
      await t.conversations.whenIdle()
      const after = await storedCounts(t.db)
      await expectRefused(
        { conversation_id: cid, model: 'eyes', messages: [gpt4freeMessage('x', [theirs])] },
        404,
        /File not found/,
      )
      expect(await storedCounts(t.db)).toEqual(after)
    })

    test('malformed, oversized and hostile parts are 422s naming the field, and store nothing', async () => {
      const user = newUser()
      const before = await storedCounts(t.db)
      const multimodal = (parts: unknown[], metadata?: unknown) => ({
        messages: [
          {
            role: 'user',
            content: { content_type: 'multimodal_text', parts },
            ...(metadata === undefined ? {} : { metadata }),
          },
        ],
      })
      const cases: [unknown, RegExp][] = [
        [
          multimodal([{ asset_pointer: 'https://evil.example/x.png' }, 'hi']),
          /parts\[0\]\.asset_pointer/,
        ],
        [
          multimodal([{ asset_pointer: 'file-service://../../etc/passwd' }]),
          /parts\[0\]\.asset_pointer/,
        ],
        [
          multimodal([
            { content_type: 'audio_asset_pointer', asset_pointer: 'file-service://file-abc' },
          ]),
          /parts\[0\]\.content_type/,
        ],
        [
          multimodal([{ asset_pointer: 'file-service://file-abc', width: -1 }]),
          /parts\[0\]\.width/,
        ],
        [
          multimodal([{ asset_pointer: 'file-service://file-abc', size_bytes: 'big' }]),
          /parts\[0\]\.size_bytes/,
        ],
        [multimodal([7]), /parts/],
        [multimodal(['x'], { attachments: 'all' }), /metadata\.attachments/],
        [
          multimodal(['x'], {
            attachments: Array.from({ length: 11 }, (_, i) => ({ id: `file-${i}` })),
          }),
          /metadata\.attachments/,
        ],
        [
          multimodal(['x'], { attachments: [{ id: '../secret' }] }),
          /metadata\.attachments\[0\]\.id/,
        ],
        [
          multimodal(['x'], { attachments: [{ id: 'file-a', name: 'n'.repeat(256) }] }),
          /attachments\[0\]\.name/,
        ],
        [
          {
            messages: [
              {
                role: 'user',
                content: {
                  content_type: 'text',
                  parts: [{ asset_pointer: 'file-service://file-abc' }],
                },
              },
            ],
          },
          /parts\[0\]/,
        ],
        [multimodal(Array.from({ length: 33 }, () => 'x')), /parts/],
      ]
      for (const [body, field] of cases) {
        const { response, text } = await sendAs(user, body as Record<string, unknown>)
        expect(response.status).toBe(422)
        expect((JSON.parse(text) as { detail: string }).detail).toMatch(field)
      }
      expect(await storedCounts(t.db)).toEqual(before)
    })

    test('a retried gpt4free send answers with its stream; the same id with another image is a conflict; a deleted file leaves the conversation usable', async () => {
      const user = newUser()
      const a = await upload(user, 'a.png', png(2, 2))
      const b = await upload(user, 'b.png', png(4, 4))
      const message = gpt4freeMessage(`twice ${mark()}`, [a])
      const first = await sendAs(user, { model: 'eyes', messages: [message] })
      const retry = await sendAs(user, { model: 'eyes', messages: [message] })
      expect(retry.response.status).toBe(200)
      expect(retry.text).toBe(first.text)
      const other = await sendAs(user, {
        model: 'eyes',
        messages: [gpt4freeMessage('twice', [b], message.id)],
      })
      expect(other.response.status).toBe(409)

      await t.conversations.whenIdle()
      const removed = await t.app.handle(
        new Request(`http://localhost/backend-api/files/${a.file_id}`, {
          method: 'DELETE',
          headers: as(user),
        }),
      )
      expect(removed.status).toBe(200)
      const text = `after the delete ${mark()}`
      const next = await sendAs(user, {
        conversation_id: conversationIdOf(first.frames),
        model: 'eyes',
        messages: [{ role: 'user', content: { content_type: 'text', parts: [text] } }],
      })
      expect(next.text).not.toContain('"type":"error"')
      const request = await requestWith(text)
      // The earlier message is there, its image gone with its file.
      const users: unknown[] = request.messages
        .filter((m) => m.role === 'user')
        .map((m) => m.content)
      expect(users).toEqual([message.content.parts[1], text])
    })

    test('a file that cannot be read when the turn runs ends it with an error item, not a hang', async () => {
      const user = newUser()
      const file = await upload(user, 'broken.png', png(2, 2))
      // The stored bytes become a folder: reading them fails (as a store that broke would).
      const path = join(t.config.files.dir, 'files', file.file_id)
      await rm(path)
      await mkdir(path)
      const sent = await sendAs(user, {
        model: 'eyes',
        messages: [gpt4freeMessage('look', [file])],
      })
      expect(sent.response.status).toBe(200)
      const error = sent.frames.find((frame) => frame.data.includes('"type":"error"'))
      expect(dataOf<{ code: string; detail: string }>(error)).toMatchObject({
        code: 'attachment_unavailable',
        detail: expect.stringMatching(/attached files could not be read/),
      })
      expect(sent.text).toContain('data: [DONE]')
    })
  },
)
