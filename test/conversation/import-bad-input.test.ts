// POST /conversations/import with bad files (CONTRACT §3, §17, §23): a file
// that is no array of conversations is a 422; a conversation in it with
// malformed JSON, wrong types, a broken tree or unstorable text is skipped
// with a reason naming its first bad field, nothing of it is stored, and the
// rest are imported; a form upload is refused with how to send the file; a file or a
// zipped conversations.json past IMPORT_MAX_BYTES is a 413; hostile zips (a
// bomb, names that climb out of the archive, damage) are refused or ignored
// without reading what they would make the service read. On every backend.
import { describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { strToU8, zipSync } from 'fflate'
import { describeEachBackend } from '../support/backend-apps.ts'
import { newUser } from '../support/conversation-app.ts'
import {
  chatgptConversation,
  exported,
  type ImportReport,
  imported,
  importFile,
} from '../support/transfer.ts'

/** A small import limit, so oversized files are cheap to make. */
const LIMIT = 64 * 1024

type Conversation = Record<string, unknown>
type Mapping = Record<string, { message: Record<string, unknown> | null; parent: string | null }>

/** A well-formed conversation of two messages, u1 and a1, changed by `change`. */
function conversation(change: (fields: Conversation, mapping: Mapping) => void = () => {}) {
  const fields = chatgptConversation(randomUUID(), [
    { id: 'u1', text: 'hello' },
    { id: 'a1', text: 'hi' },
  ])
  change(fields, fields.mapping as Mapping)
  return fields
}

const message = (mapping: Mapping, id: string) => mapping[id]?.message as Record<string, unknown>

describeEachBackend({ env: { IMPORT_MAX_BYTES: String(LIMIT) } }, (t) => {
  /** How many conversations and messages the user has. */
  async function stored(user: string) {
    const rows = await t.db.query<{ conversations: number; messages: number }>(
      `SELECT (SELECT count(*)::int FROM conversations WHERE user_id = $1) AS conversations,
                (SELECT count(*)::int FROM messages m JOIN conversations c ON c.id = m.conversation_id
                  WHERE c.user_id = $1) AS messages`,
      [user],
    )
    return rows[0]
  }

  /** Imports `body` as a new user: answers the error, and checks nothing was stored. */
  async function refused(
    body: RequestInit['body'],
    status: number,
    detail: RegExp,
    headers: Record<string, string> = {},
  ) {
    const user = newUser()
    const response = await importFile(t.app, user, body, headers)
    const error = (await response.json()) as { detail: string; code: string }
    expect({ status: response.status, detail: error.detail }).toEqual({
      status,
      detail: expect.stringMatching(detail),
    })
    expect(Object.keys(error).sort()).toEqual(['code', 'detail'])
    expect(await stored(user)).toEqual({ conversations: 0, messages: 0 })
    return error
  }

  const file = (...conversations: unknown[]) => JSON.stringify(conversations)

  /**
   * Imports `bad` (the text of one array element) between two good
   * conversations as a new user: the good ones are stored, `bad` is skipped
   * alone with a reason matching `reason`, nothing of it is stored.
   */
  async function skippedAlone(bad: string, reason: RegExp, id: string | null = null) {
    const user = newUser()
    const [first, last] = [conversation(), conversation()]
    const body = `[${JSON.stringify(first)},${bad},${JSON.stringify(last)}]`
    const report = await imported(t.app, user, body)
    expect(report).toEqual({
      imported: 2,
      skipped: [{ id, index: 1, reason: expect.stringMatching(reason) }],
    })
    expect((await exported(t.app, user)).map((entry) => entry.id).sort()).toEqual(
      [first.id as string, last.id as string].sort(),
    )
    expect(await stored(user)).toEqual({ conversations: 2, messages: 4 })
    return { user, body, report }
  }

  describe('malformed files', () => {
    test.each([
      ['not JSON at all', 'hello', /must be a JSON array/],
      ['an object', '{"conversations":[]}', /must be a JSON array/],
      ['empty', '', /must be a JSON array/],
      [
        'a trailing comma',
        `[${JSON.stringify(conversation())},]`,
        /conversation \[1\] is missing before "\]"/,
      ],
      [
        'cut short',
        `[${JSON.stringify(conversation()).slice(0, 50)}`,
        /ends inside conversation \[0\]/,
      ],
      ['text after the array', '[] trailing', /text after the array/],
      [
        'no comma',
        `[${JSON.stringify(conversation())} {}]`,
        /"," or "\]" must follow conversation \[0\]/,
      ],
    ])('%s is a 422', async (_, body, detail) => {
      const error = await refused(body, 422, detail)
      expect(error.code).toBe('validation_error')
    })

    test('a file cut short after a whole conversation keeps that one, and says so', async () => {
      const user = newUser()
      const response = await importFile(t.app, user, `[${JSON.stringify(conversation())}`)
      expect(response.status).toBe(422)
      const { detail } = (await response.json()) as { detail: string }
      expect(detail).toContain('ends before its array is closed')
      expect(detail).toContain('The 1 conversation(s) before it were imported')
      expect(await stored(user)).toEqual({ conversations: 1, messages: 2 })
    })
  })

  describe('an element that is no readable conversation is skipped, the rest imported', () => {
    test.each([
      ['a string', '"x"', /"\[1\]" of the file must be an object/],
      ['a number', '42', /"\[1\]" of the file must be an object/],
      ['null', 'null', /"\[1\]" of the file must be an object/],
      ['a list', '[{"id":"x"}]', /"\[1\]" of the file must be an object/],
      ['a bare word', 'tru', /"\[1\]" of the file is not valid JSON/],
      ['bad JSON inside', '{"id": "x", "mapping": {,}}', /"\[1\]" of the file is not valid JSON/],
    ])('%s', async (_, bad, reason) => {
      await skippedAlone(bad, reason)
    })

    test('bytes that are not UTF-8', async () => {
      const user = newUser()
      const good = JSON.stringify(conversation())
      const bytes = new Uint8Array([...strToU8(`[${good},{"id":"`), 0xff, 0xfe, ...strToU8('"}]')])
      expect(await imported(t.app, user, bytes)).toEqual({
        imported: 1,
        skipped: [
          {
            id: null,
            index: 1,
            reason: expect.stringMatching(/"\[1\]" of the file is not valid UTF-8/),
          },
        ],
      })
      expect(await stored(user)).toEqual({ conversations: 1, messages: 2 })
    })

    test('a form upload is refused with how to send the file, and stores nothing', async () => {
      const form = new FormData()
      form.append(
        'file',
        new Blob([file(conversation())], { type: 'application/json' }),
        'conversations.json',
      )
      const user = newUser()
      const response = await t.app.handle(
        new Request('http://localhost/backend-api/conversations/import', {
          method: 'POST',
          headers: { 'x-user-id': user },
          body: form,
        }),
      )
      expect(response.status).toBe(422)
      const error = (await response.json()) as { detail: string; code: string }
      expect(error.code).toBe('unsupported_media_type')
      expect(error.detail).toContain('send the file itself as the request body')
      expect(await stored(user)).toEqual({ conversations: 0, messages: 0 })
    })
  })

  describe('a conversation with wrong types or a broken tree is skipped, naming its first bad field', () => {
    const cases: [string, (fields: Conversation, mapping: Mapping) => void, RegExp][] = [
      [
        'a role that is not a string',
        (_, m) => {
          ;(message(m, 'u1').author as Record<string, unknown>).role = 7
        },
        /"\[0\]\.mapping\.u1\.message\.author\.role" of the file must be a string/,
      ],
      [
        'no author',
        (_, m) => {
          delete message(m, 'a1').author
        },
        /"\[0\]\.mapping\.a1\.message\.author" of the file must be an object/,
      ],
      [
        'a mapping that is a list',
        (f) => {
          f.mapping = []
        },
        /"\[0\]\.mapping" of the file must be an object/,
      ],
      [
        'text parts that are not a list',
        (_, m) => {
          message(m, 'u1').content = { content_type: 'text', parts: 'hello' }
        },
        /"\[0\]\.mapping\.u1\.message\.content\.parts" of the file must be an array/,
      ],
      [
        'a time that is text',
        (_, m) => {
          message(m, 'a1').create_time = 'yesterday'
        },
        /"\[0\]\.mapping\.a1\.message\.create_time" of the file must be a number/,
      ],
      [
        'a negative time',
        (f) => {
          f.create_time = -5
        },
        /"\[0\]\.create_time" of the file must be a time/,
      ],
      [
        'no id',
        (f) => {
          delete f.id
          delete f.conversation_id
        },
        /"\[0\]\.conversation_id" of the file must be a string/,
      ],
      [
        'a status that is a number',
        (_, m) => {
          message(m, 'u1').status = 5
        },
        /"\[0\]\.mapping\.u1\.message\.status" of the file must be a string/,
      ],
      [
        'an archive flag that is text',
        (f) => {
          f.is_archived = 'yes'
        },
        /"\[0\]\.is_archived" of the file must be true or false/,
      ],
      [
        'a message id that is not its key',
        (_, m) => {
          message(m, 'a1').id = 'other'
        },
        /"\[0\]\.mapping\.a1\.message\.id" of the file must be the key of its mapping node/,
      ],
      [
        'a parent that is not in the mapping',
        (_, m) => {
          ;(m.a1 as { parent: string }).parent = 'nowhere'
        },
        /"\[0\]\.mapping\.a1\.parent" of the file must name a node of the mapping/,
      ],
      [
        'a cycle',
        (_, m) => {
          ;(m.u1 as { parent: string }).parent = 'a1'
        },
        /"\[0\]\.mapping\.u1\.parent" of the file makes a cycle/,
      ],
      [
        'a NUL character in a message',
        (_, m) => {
          message(m, 'a1').content = { content_type: 'text', parts: ['ok', 'a\u0000b'] }
        },
        /"\[0\]\.mapping\.a1\.message\.content\.parts\[1\]" contains a NUL character/,
      ],
      [
        'a lone surrogate in a title',
        (f) => {
          f.title = 'bad \ud800 title'
        },
        /"\[0\]\.title" contains an unpaired UTF-16 surrogate/,
      ],
      [
        'metadata nested absurdly deep',
        (_, m) => {
          let deep: unknown = 'bottom'
          for (let level = 0; level < 100; level++) deep = { deeper: deep }
          message(m, 'a1').metadata = { finish_details: deep }
        },
        /"\[0\]\.mapping\.a1\.message\.metadata\.finish_details\.deeper[.a-z]*…" contains arrays or objects nested more than 64 levels/,
      ],
    ]
    test.each(cases)('%s', async (name, change, detail) => {
      const bad = conversation(change)
      const id = name === 'no id' ? null : (bad.id as string)
      // The paths name the bad conversation's place in the file: [1] here.
      const reason = new RegExp(detail.source.replaceAll('\\[0\\]', '\\[1\\]'))
      await skippedAlone(JSON.stringify(bad), reason, id)
    })

    test('importing the file again stores nothing new, and skips the bad one again', async () => {
      const bad = conversation((_, m) => {
        ;(message(m, 'a1').author as Record<string, unknown>).role = null
      })
      const { user, body, report } = await skippedAlone(
        JSON.stringify(bad),
        /"\[1\]\.mapping\.a1\.message\.author\.role"/,
        bad.id as string,
      )
      const again = await imported(t.app, user, body)
      expect(again.imported).toBe(0)
      expect(again.skipped.map(({ index, reason }) => [index, reason])).toEqual([
        [0, 'already imported'],
        [1, (report.skipped[0] as ImportReport['skipped'][number]).reason],
        [2, 'already imported'],
      ])
      expect(await stored(user)).toEqual({ conversations: 2, messages: 4 })
    })
  })

  describe('size', () => {
    const big = () =>
      file(
        conversation((_, m) => {
          message(m, 'u1').content = { content_type: 'text', parts: ['x'.repeat(LIMIT)] }
        }),
      )

    test('a file past IMPORT_MAX_BYTES is a 413', async () => {
      const error = await refused(big(), 413, new RegExp(`larger than ${LIMIT} bytes`))
      expect(error.code).toBe('payload_too_large')
    })

    test('so is one sent without a length, in chunks', async () => {
      const bytes = strToU8(big())
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (let at = 0; at < bytes.length; at += 1000)
            controller.enqueue(bytes.slice(at, at + 1000))
          controller.close()
        },
      })
      await refused(body, 413, /larger than/)
    })
  })

  describe('hostile zips', () => {
    const json = () => strToU8(file(conversation()))

    test('a zip bomb: conversations.json unpacking past the limit is a 413, read no further', async () => {
      // 50 MB of spaces inside a valid array: a few dozen KB zipped.
      const bomb = new Uint8Array(50 * 2 ** 20).fill(0x20)
      bomb[0] = 0x5b
      bomb[bomb.length - 1] = 0x5d
      const zip = zipSync({ 'conversations.json': [bomb, { level: 9 }] })
      expect(zip.length).toBeLessThan(LIMIT)
      const started = performance.now()
      await refused(zip, 413, /conversations\.json in the zip is larger than/, {
        'content-type': 'application/zip',
      })
      // Generous on a loaded machine: inflating all 50 MB is not needed to refuse it.
      expect(performance.now() - started).toBeLessThan(5_000)
    })

    test.each([
      ['../conversations.json'],
      ['/conversations.json'],
      ['a/b/conversations.json'],
      ['..\\conversations.json'],
      ['./conversations.json'],
      ['conversations.json.exe'],
    ])('an entry named %s is not read: "no conversations.json"', async (name) => {
      await refused(zipSync({ [name]: json() }), 422, /holds no conversations\.json/, {
        'content-type': 'application/zip',
      })
    })

    test('a damaged entry besides conversations.json does not matter', async () => {
      const junk = new Uint8Array(20_000).map((_, index) => (index * 7919) % 251)
      const zip = zipSync({ 'junk.bin': [junk, { level: 6 }], 'conversations.json': json() })
      // Garble the deflate data of junk.bin (it starts after its 30-byte header and its name).
      for (let at = 30 + 'junk.bin'.length + 2; at < 30 + 'junk.bin'.length + 200; at++)
        zip[at] = 0xff
      const user = newUser()
      const response = await importFile(t.app, user, zip, { 'content-type': 'application/zip' })
      expect(response.status).toBe(200)
      expect(((await response.json()) as { imported: number }).imported).toBe(1)
    })

    test('a damaged or cut-short zip is a 422', async () => {
      const zip = zipSync({ 'conversations.json': json() })
      await refused(zip.slice(0, Math.floor(zip.length / 2)), 422, /damaged or cut short/)
      const garbled = zip.slice()
      for (let at = 60; at < garbled.length - 60; at++) garbled[at] = 0x00
      await refused(garbled, 422, /damaged|no conversations\.json|not valid|must be/)
    })

    test('a zip holding something else, or nothing, is a 422', async () => {
      await refused(
        zipSync({ 'chat.html': strToU8('<html></html>') }),
        422,
        /holds no conversations\.json/,
      )
      await refused(zipSync({}), 422, /holds no conversations\.json/)
    })
  })

  test('no identity is a 401 and stores nothing', async () => {
    const response = await importFile(t.app, '', file(conversation()), { 'x-user-id': '' })
    expect(response.status).toBe(401)
  })
})
