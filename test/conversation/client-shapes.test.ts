// What real ChatGPT clients send (CONTRACT §9) over HTTP: `author.role` as well
// as `role`, identity from X-User-Id on a send, and a request body exactly as
// gpt4free's OpenaiChat provider builds it, answered by a stream such a client
// parses (message_type, recipient, the `error` key).
import { describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationIdOf,
  dataOf,
  type Frame,
  framesOf,
  get,
  newUser,
  post,
  sendAndRead,
} from '../support/conversation-app.ts'

const SEND = '/backend-api/f/conversation'

const content = (text: string) => ({ content_type: 'text', parts: [text] })

/** The reply a v1 client rebuilds: the add's parts plus every append. */
const replyOf = (frames: Frame[]) =>
  frames
    .filter((frame) => frame.data.includes('"/message/content/parts/0"'))
    .map((frame) => dataOf<{ v: [{ v: string }] }>(frame).v[0].v)
    .join('')

/** A send body as gpt4free's OpenaiChat.create_authed builds it (g4f/Provider/needs_auth/OpenaiChat.py). */
function gpt4freeBody(prompt: string, conversation?: { id: string; parentMessageId: string }) {
  return {
    action: 'next',
    parent_message_id: conversation?.parentMessageId ?? 'client-created-root',
    model: 'auto',
    timezone_offset_min: -120,
    timezone: 'Europe/Berlin',
    conversation_mode: { kind: 'primary_assistant' },
    enable_message_followups: true,
    system_hints: null,
    thinking_effort: 'standard',
    supports_buffering: true,
    supported_encodings: ['v1'],
    client_contextual_info: {
      is_dark_mode: false,
      time_since_loaded: 123,
      page_height: 578,
      page_width: 1850,
      pixel_ratio: 1,
      screen_height: 1080,
      screen_width: 1920,
    },
    paragen_cot_summary_display_override: 'allow',
    ...(conversation ? { conversation_id: conversation.id } : {}),
    messages: [
      {
        id: randomUUID(),
        author: { role: 'user' },
        content: content(prompt),
        metadata: { serialization_metadata: { custom_symbol_offsets: [] } },
        create_time: Date.now() / 1000,
      },
    ],
  }
}

describeEachBackend({}, (t) => {
  async function messageCount() {
    const rows = await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM messages')
    return rows[0]?.n
  }

  async function expectRefused(
    body: unknown,
    status: number,
    detail: RegExp,
    headers: Record<string, string> = {},
  ) {
    const before = await messageCount()
    const response = await post(t.app, SEND, body, headers)
    expect(response.status).toBe(status)
    const error = (await response.json()) as { detail: string; code: string }
    expect(Object.keys(error).sort()).toEqual(['code', 'detail'])
    expect(error.detail).toMatch(detail)
    expect(await messageCount()).toBe(before)
  }

  const storedRoles = async (user: string, cid: string) =>
    (
      (await (
        await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
      ).json()) as { messages: { role: string; content: { parts: string[] } }[] }
    ).messages.map((m) => [m.role, m.content.parts[0]])

  describe('the role of an input message', () => {
    test.each([
      ['author.role', { author: { role: 'user' } }],
      ['role', { role: 'user' }],
      ['both, agreeing', { role: 'user', author: { role: 'user', name: null, metadata: {} } }],
    ])('given as %s, it is stored and echoed as a user message', async (_, who) => {
      const user = newUser()
      const { response, frames } = await sendAndRead(t.app, {
        user_id: user,
        messages: [{ id: 'r-1', ...who, content: content('who am I?') }],
      })
      expect(response.status).toBe(200)
      const input = dataOf<{ input_message: { id: string; author: unknown } }>(frames[2])
      expect(input.input_message).toMatchObject({ id: 'r-1', author: { role: 'user' } })
      const cid = conversationIdOf(frames)
      expect(await storedRoles(user, cid)).toEqual([
        ['user', 'who am I?'],
        ['assistant', replyOf(frames)],
      ])
    })

    test('role and author.role that disagree are 422, naming the field', async () => {
      const user = newUser()
      await expectRefused(
        {
          user_id: user,
          messages: [{ role: 'user', author: { role: 'assistant' }, content: content('x') }],
        },
        422,
        /messages\[0\]\.author\.role/,
      )
      await expectRefused(
        {
          user_id: user,
          messages: [{ role: 'system', author: { role: 'user' }, content: content('x') }],
        },
        422,
        /messages\[0\]\.role/,
      )
    })

    test('neither role nor author.role, or an author without a role, is 422', async () => {
      const user = newUser()
      await expectRefused(
        { user_id: user, messages: [{ content: content('x') }] },
        422,
        /messages\[0\]\.role.*author\.role/,
      )
      await expectRefused(
        {
          user_id: user,
          messages: [
            { role: 'user', content: content('fine') },
            { author: { name: 'me' }, content: content('x') },
          ],
        },
        422,
        /messages\[1\]\.role/,
      )
    })

    test('an author that is not an object, or an author role not user, is 422', async () => {
      const user = newUser()
      await expectRefused(
        { user_id: user, messages: [{ author: 'user', content: content('x') }] },
        422,
        /messages\[0\]\.author/,
      )
      await expectRefused(
        { user_id: user, messages: [{ author: { role: 'system' }, content: content('x') }] },
        422,
        /messages\[0\]\.author\.role/,
      )
    })
  })

  describe('identity on a send', () => {
    test('X-User-Id names the user when the body does not', async () => {
      const user = newUser()
      const response = await post(
        t.app,
        SEND,
        { messages: [{ role: 'user', content: content('by header') }] },
        { 'x-user-id': user },
      )
      expect(response.status).toBe(200)
      const frames = framesOf(await response.text())
      const cid = conversationIdOf(frames)
      const list = (await (
        await get(t.app, '/backend-api/conversations', { 'x-user-id': user })
      ).json()) as { items: { id: string }[] }
      expect(list.items.map((item) => item.id)).toEqual([cid])
    })

    test("the body's user_id wins over the header", async () => {
      const bodyUser = newUser()
      const headerUser = newUser()
      const response = await post(
        t.app,
        SEND,
        { user_id: bodyUser, messages: [{ role: 'user', content: content('mine') }] },
        { 'x-user-id': headerUser },
      )
      const frames = framesOf(await response.text())
      const cid = conversationIdOf(frames)
      const own = await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': bodyUser })
      expect(own.status).toBe(200)
      const other = await get(t.app, `/backend-api/conversation/${cid}`, {
        'x-user-id': headerUser,
      })
      expect(other.status).toBe(404)
    })

    test('no user at all is 401; an oversized X-User-Id is 422', async () => {
      await expectRefused({ messages: [{ role: 'user', content: content('x') }] }, 401, /user/)
      await expectRefused({ messages: [{ role: 'user', content: content('x') }] }, 422, /128/, {
        'x-user-id': 'u'.repeat(129),
      })
    })
  })

  describe('a gpt4free client, unmodified', () => {
    test('starts a conversation and continues it with the bodies it builds', async () => {
      const user = newUser()
      const headers = { 'x-user-id': user, accept: 'text/event-stream' }
      const first = await post(t.app, SEND, gpt4freeBody('What is a monad?'), headers)
      expect(first.status).toBe(200)
      const frames = framesOf(await first.text())
      // What the client looks for: the assistant message of type next, to all.
      const add = dataOf<{
        v: {
          message: {
            id: string
            author: { role: string; name: null; metadata: object }
            recipient: string
            channel: null
            weight: number
            metadata: { message_type: string }
          }
          conversation_id: string
        }
      }>(frames[3])
      expect(add.v.message).toMatchObject({
        author: { role: 'assistant', name: null, metadata: {} },
        recipient: 'all',
        channel: null,
        weight: 1,
        metadata: { message_type: 'next' },
      })
      expect(frames.at(-1)?.data).toBe('[DONE]')
      const cid = add.v.conversation_id

      // The next turn: conversation_id and the reply it got as parent_message_id.
      const second = await post(
        t.app,
        SEND,
        gpt4freeBody('And a functor?', { id: cid, parentMessageId: add.v.message.id }),
        headers,
      )
      expect(second.status).toBe(200)
      const secondFrames = framesOf(await second.text())
      expect(replyOf(secondFrames)).toContain('And a functor?')
      expect((await storedRoles(user, cid)).map(([role]) => role)).toEqual([
        'user',
        'assistant',
        'user',
        'assistant',
      ])
    })
  })
})
