// POST /backend-api/f/conversation: the exact v1 stream of CONTRACT §4.2 (with
// §9's assistant-message fields and §11's title item on a conversation's first
// turn), checked byte for byte, and what it stores.
import { beforeAll, describe, expect, test } from 'bun:test'
import { decodeJwt } from 'jose'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationIdOf,
  dataOf,
  type Frame,
  get,
  newUser,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'

describeEachBackend({}, (t) => {
  const line = (event: string | undefined, value: unknown) =>
    `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(value)}\n\n`

  describe('a new conversation', () => {
    let user: string
    let frames: Frame[]
    let response: Response
    let text: string

    beforeAll(async () => {
      user = newUser()
      ;({ response, frames, text } = await sendAndRead(t.app, {
        user_id: user,
        messages: [textMessage('Hello there, how are you?', 'm-1')],
        metadata: { temperature: 0.5 },
      }))
    })

    test('answers 200 with the SSE headers', () => {
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toBe('text/event-stream')
      expect(response.headers.get('cache-control')).toBe('no-cache')
      expect(response.headers.get('x-accel-buffering')).toBe('no')
    })

    test('sends every item in order, byte for byte', async () => {
      const cid = conversationIdOf(frames)
      expect(cid).toMatch(/^[0-9a-f-]{36}$/)
      const token = dataOf<{ token: string }>(frames[1]).token
      const user0 = dataOf<{ input_message: { create_time: number } }>(frames[2]).input_message
      const add = dataOf<{ v: { message: { id: string; create_time: number } } }>(frames[3]).v
        .message
      const aid = add.id
      const appends = frames.slice(6, -3)
      expect(appends.length).toBeGreaterThanOrEqual(2)
      const chunks = appends.map((frame) => dataOf<{ v: [{ v: string }] }>(frame).v[0].v)

      const expected =
        'event: delta_encoding\ndata: "v1"\n\n' +
        line(undefined, { type: 'resume_conversation_token', token, conversation_id: cid }) +
        line(undefined, {
          type: 'input_message',
          input_message: {
            id: 'm-1',
            author: { role: 'user' },
            create_time: user0.create_time,
            content: { content_type: 'text', parts: ['Hello there, how are you?'] },
            status: 'finished_successfully',
            end_turn: null,
            metadata: {},
          },
          conversation_id: cid,
        }) +
        line('delta', {
          p: '',
          o: 'add',
          v: {
            message: {
              id: aid,
              author: { role: 'assistant', name: null, metadata: {} },
              create_time: add.create_time,
              update_time: add.create_time,
              content: { content_type: 'text', parts: [''] },
              status: 'in_progress',
              end_turn: null,
              weight: 1,
              metadata: { model_slug: 'local-echo', parent_id: 'm-1', message_type: 'next' },
              recipient: 'all',
              channel: null,
            },
            conversation_id: cid,
          },
          c: 0,
        }) +
        // The local model writes no title: the first message names the conversation, at once.
        line(undefined, {
          type: 'title_generation',
          title: 'Hello there, how are you?',
          conversation_id: cid,
        }) +
        line(undefined, {
          type: 'message_marker',
          conversation_id: cid,
          message_id: aid,
          marker: 'user_visible_token',
          event: 'first',
        }) +
        chunks
          .map((chunk) =>
            line('delta', {
              p: '',
              o: 'patch',
              v: [{ p: '/message/content/parts/0', o: 'append', v: chunk }],
            }),
          )
          .join('') +
        'event: delta\ndata: {"p":"","o":"patch","v":[{"p":"/message/status","o":"replace","v":"finished_successfully"},{"p":"/message/end_turn","o":"replace","v":true},{"p":"/message/metadata","o":"append","v":{"is_complete":true,"finish_details":{"type":"stop"}}}]}\n\n' +
        line(undefined, { type: 'message_stream_complete', conversation_id: cid }) +
        'data: [DONE]\n\n'
      expect(text).toBe(expected)
    })

    test('create_time values are Unix seconds with a fraction', () => {
      const user0 = dataOf<{ input_message: { create_time: number } }>(frames[2]).input_message
      expect(Number.isInteger(user0.create_time)).toBe(false)
      expect(Math.abs(user0.create_time - Date.now() / 1000)).toBeLessThan(60)
      expect(frames[2]?.data).toMatch(/"create_time":\d+\.\d+/)
    })

    test('the resume token is an HS256 JWT with the contract claims', () => {
      const token = dataOf<{ token: string }>(frames[1]).token
      const [header] = token.split('.')
      expect(JSON.parse(Buffer.from(header as string, 'base64url').toString())).toMatchObject({
        alg: 'HS256',
      })
      const claims = decodeJwt(token)
      const aid = dataOf<{ v: { message: { id: string } } }>(frames[3]).v.message.id
      expect(claims.sub).toBe(user)
      expect(claims.conversation_id).toBe(conversationIdOf(frames))
      expect(claims.message_id).toBe(aid)
      expect((claims.exp as number) - (claims.iat as number)).toBe(7200)
    })

    test('stores both messages; the appended chunks equal the stored reply', async () => {
      const cid = conversationIdOf(frames)
      const chunks = frames
        .slice(6, -3)
        .map((frame) => dataOf<{ v: [{ v: string }] }>(frame).v[0].v)
        .join('')
      const history = await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
      expect(history.status).toBe(200)
      const body = (await history.json()) as {
        conversation_id: string
        messages: { id: string; role: string; content: { parts: string[] }; created_at: string }[]
      }
      expect(body.conversation_id).toBe(cid)
      expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant'])
      expect(body.messages[0]?.id).toBe('m-1')
      expect(body.messages[1]?.content.parts).toEqual([chunks])
      for (const m of body.messages) expect(m.created_at).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z$/)
    })
  })

  describe('an existing conversation', () => {
    test('continues it: one input_message per input, reply answers the last one', async () => {
      const user = newUser()
      const first = await sendAndRead(t.app, { user_id: user, messages: [textMessage('one')] })
      const cid = conversationIdOf(first.frames)
      const second = await sendAndRead(t.app, {
        user_id: user,
        conversation_id: cid,
        messages: [textMessage('two', 'x-2'), textMessage('three', 'x-3')],
      })
      expect(second.response.status).toBe(200)
      expect(
        second.frames.slice(0, 5).map((f) => f.event ?? dataOf<{ type?: string }>(f).type),
      ).toEqual([
        'delta_encoding',
        'resume_conversation_token',
        'input_message',
        'input_message',
        'delta',
      ])
      const add = dataOf<{ v: { message: { metadata: { parent_id: string } } } }>(second.frames[4])
      expect(add.v.message.metadata.parent_id).toBe('x-3')
      const history = (await (
        await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
      ).json()) as { messages: { id: string; role: string }[] }
      expect(history.messages.map((m) => m.role)).toEqual([
        'user',
        'assistant',
        'user',
        'user',
        'assistant',
      ])
      expect(history.messages[2]?.id).toBe('x-2')
      expect(history.messages[3]?.id).toBe('x-3')
    })

    test('the reply depends on the context the cache list feeds the model', async () => {
      const user = newUser()
      const first = await sendAndRead(t.app, { user_id: user, messages: [textMessage('alpha')] })
      const cid = conversationIdOf(first.frames)
      const body = { user_id: user, conversation_id: cid, messages: [textMessage('beta')] }
      const withContext = await sendAndRead(t.app, body)
      const fresh = await sendAndRead(t.app, {
        user_id: newUser(),
        messages: [textMessage('beta')],
      })
      const replyOf = (frames: Frame[]) =>
        frames
          .filter((f) => f.data.includes('/message/content/parts/0'))
          .map((f) => dataOf<{ v: [{ v: string }] }>(f).v[0].v)
          .join('')
      expect(replyOf(withContext.frames)).not.toBe(replyOf(fresh.frames))
    })
  })
})
