// Text that cannot be stored faithfully (NUL, unpaired surrogates), JSON nested
// absurdly deep and bodies that are not UTF-8: a 422 naming the field on every
// route, nothing stored, nothing rewritten (CONTRACT §3). The walker itself is
// checked first, then each route over every app backend.
import { describe, expect, test } from 'bun:test'
import {
  describeUnstorable,
  findUnstorableText,
  MAX_JSON_DEPTH,
  textProblem,
} from '../src/storable-text.ts'
import { call, docstoreApp } from './docstore/harness.ts'
import { describeEachBackend } from './support/backend-apps.ts'
import { get, newUser, post, textMessage } from './support/conversation-app.ts'
import { storedCounts } from './support/stored-counts.ts'

const NUL = '\u0000'
const HIGH = '\ud800'
const LOW = '\udc00'

describe('findUnstorableText', () => {
  test('plain text, emoji and surrogate pairs pass', () => {
    expect(textProblem('hello, wörld 😀 \ud83d\ude00')).toBeUndefined()
    expect(findUnstorableText({ a: ['x', 1, null, true, { b: '😀' }] })).toBeUndefined()
  })

  test('finds NUL and unpaired surrogates with their JSON path', () => {
    expect(findUnstorableText({ messages: [{ parts: ['ok', `a${NUL}b`] }] })).toEqual({
      path: 'messages[0].parts[1]',
      problem: 'nul',
      inKey: false,
    })
    expect(findUnstorableText({ user_id: `a${HIGH}b` })?.problem).toBe('surrogate')
    expect(findUnstorableText({ user_id: `a${LOW}b` })?.problem).toBe('surrogate')
    // A low surrogate before a high one is not a pair.
    expect(findUnstorableText([`${LOW}${HIGH}`])).toEqual({
      path: '[0]',
      problem: 'surrogate',
      inKey: false,
    })
    expect(findUnstorableText(`x${NUL}`)).toEqual({ path: '', problem: 'nul', inKey: false })
  })

  test('of several problems, the first in document order is named (keys before values)', () => {
    const value = { a: { b: ['ok', `x${NUL}`] }, c: NUL, [`k${HIGH}`]: 'v' }
    expect(findUnstorableText(value)).toEqual({ path: '', problem: 'surrogate', inKey: true })
    expect(findUnstorableText({ a: { b: ['ok', `x${NUL}`] }, c: NUL })).toEqual({
      path: 'a.b[1]',
      problem: 'nul',
      inKey: false,
    })
    expect(findUnstorableText([[['ok']], [`${LOW}`], NUL])?.path).toBe('[1][0]')
  })

  test('a huge key is not echoed whole in the error', () => {
    const key = 'k'.repeat(100_000)
    const found = findUnstorableText({ [key]: NUL })
    expect(found?.path).toBe(key)
    const detail = describeUnstorable(found as NonNullable<typeof found>, 'body')
    expect(detail.length).toBeLessThan(300)
    expect(detail).toContain('NUL')
  })

  test('finds bad text in keys, naming the object that holds the key', () => {
    expect(findUnstorableText({ metadata: { [`k${NUL}`]: 1 } })).toEqual({
      path: 'metadata',
      problem: 'nul',
      inKey: true,
    })
  })

  test('refuses nesting past the limit without overflowing the stack', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`)
    expect(findUnstorableText({ x: deep })?.problem).toBe('depth')
    let ok: unknown = 'leaf'
    for (let level = 0; level < MAX_JSON_DEPTH; level++) ok = [ok]
    expect(findUnstorableText(ok)).toBeUndefined()
    expect(findUnstorableText([ok])?.problem).toBe('depth')
  })
})

const deepJson = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`

describeEachBackend({}, (t) => {
  async function expect422(response: () => Promise<Response>, detail: RegExp) {
    const before = await storedCounts(t.db)
    const reply = await response()
    const body = (await reply.json()) as { detail: string; code: string }
    expect({ status: reply.status, code: body.code }).toEqual({
      status: 422,
      code: 'validation_error',
    })
    expect(body.detail).toMatch(detail)
    expect(await storedCounts(t.db)).toEqual(before)
  }

  const SEND = '/backend-api/f/conversation'
  const send = (body: unknown) => () => post(t.app, SEND, body)

  test('a send with NUL or a lone surrogate in any text names the field', async () => {
    for (const bad of [`a${NUL}b`, `a${HIGH}b`, `${LOW}`]) {
      const user = newUser()
      await expect422(
        send({ user_id: user, messages: [textMessage('fine'), textMessage(bad)] }),
        /"messages\[1\]\.content\.parts\[0\]"/,
      )
      await expect422(send({ user_id: `${user}${bad}`, messages: [textMessage('x')] }), /"user_id"/)
      await expect422(
        send({ user_id: user, messages: [textMessage('x', `id-${bad}`)] }),
        /"messages\[0\]\.id"/,
      )
      await expect422(
        send({ user_id: user, messages: [textMessage('x')], metadata: { note: bad } }),
        /"metadata\.note"/,
      )
    }
  })

  test('the error names the problem, not a generic failure', async () => {
    const user = newUser()
    await expect422(send({ user_id: user, messages: [textMessage(NUL)] }), /NUL character/)
    await expect422(send({ user_id: user, messages: [textMessage(HIGH)] }), /unpaired .*surrogate/)
    await expect422(
      send({ user_id: user, messages: [textMessage('x')], metadata: { [`k${NUL}`]: 1 } }),
      /"metadata" has a key that contains a NUL/,
    )
  })

  test('two users that differ only in a lone surrogate are never merged', async () => {
    // The JSON escapes arrive as the lone surrogates themselves once parsed.
    for (const escaped of ['a\\ud800b', 'a\\udc00b']) {
      const raw = `{"user_id":"${escaped}","messages":[{"role":"user","content":{"content_type":"text","parts":["x"]}}]}`
      await expect422(() => post(t.app, SEND, raw), /"user_id"/)
    }
    expect(await t.db.query(`SELECT id FROM users WHERE id = $1`, ['a\ufffdb'])).toEqual([])
  })

  test('JSON nested absurdly deep is a 422, not a crash', async () => {
    const raw = `{"user_id":"${newUser()}","messages":[{"role":"user","content":{"content_type":"text","parts":["x"]}}],"metadata":{"x":${deepJson(100_000)}}}`
    await expect422(() => post(t.app, SEND, raw), /nested more than 64 levels/)
    await expect422(
      () =>
        call(docstoreApp({ db: t.db, cache: t.cache }), 'POST', '/documents', { raw }).then(
          (reply) => Response.json(reply.body, { status: reply.status }),
        ),
      /nested/,
    )
  })

  test('a body that is not UTF-8 is refused, not decoded to U+FFFD', async () => {
    const bytes = new Uint8Array([
      ...new TextEncoder().encode('{"user_id":"u'),
      0xed,
      0xa0,
      0x80,
      ...new TextEncoder().encode(
        '","messages":[{"role":"user","content":{"content_type":"text","parts":["x"]}}]}',
      ),
    ])
    await expect422(
      () =>
        t.app.handle(
          new Request(`http://localhost${SEND}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: bytes,
          }),
        ),
      /not valid UTF-8/,
    )
  })

  test('a NUL in the user_id query parameter of a read names the parameter', async () => {
    await expect422(
      () => get(t.app, '/backend-api/conversations?user_id=a%00b'),
      /query parameter "user_id"/,
    )
    await expect422(
      () => get(t.app, `/backend-api/conversation/${crypto.randomUUID()}?user_id=a%00b`),
      /query parameter "user_id"/,
    )
  })

  test('a query value that is not percent-encoded UTF-8 is refused, not taken literally', async () => {
    for (const raw of ['%FF', '%ED%A0%80', '%zz'])
      await expect422(
        () => get(t.app, `/backend-api/conversations?user_id=a${raw}b`),
        /query parameter "user_id" is not valid percent-encoded UTF-8/,
      )
  })

  test('resume and stop bodies are guarded too', async () => {
    await expect422(
      () =>
        post(
          t.app,
          '/backend-api/f/conversation/resume',
          { conversation_id: crypto.randomUUID(), user_id: `u${NUL}` },
          { 'x-conduit-token': 'whatever' },
        ),
      /"user_id"/,
    )
    await expect422(
      () =>
        post(t.app, '/backend-api/stop_conversation', {
          conversation_id: crypto.randomUUID(),
          user_id: `u${HIGH}`,
        }),
      /"user_id"/,
    )
  })

  test('document content, metadata and questions are guarded', async () => {
    const app = docstoreApp({ db: t.db, cache: t.cache })
    const asResponse = (reply: { status: number; body: unknown }) =>
      Response.json(reply.body, { status: reply.status })
    await expect422(
      async () =>
        asResponse(await call(app, 'POST', '/documents', { json: { content: `x${NUL}` } })),
      /"content"/,
    )
    await expect422(
      async () =>
        asResponse(
          await call(app, 'POST', '/documents', {
            json: { content: `fine ${crypto.randomUUID()}`, metadata: { a: [HIGH] } },
          }),
        ),
      /"metadata\.a\[0\]"/,
    )
    await expect422(
      async () => asResponse(await call(app, 'POST', '/query', { json: { question: `q${NUL}` } })),
      /"question"/,
    )
  })
})
