// Bad input to POST /backend-api/f/conversation: a clear §3 error, nothing
// stored and no cache key changed.
import { describe, expect, test } from 'bun:test'
import { historyKey, listKey } from '../../src/conversation/reads/cache-keys.ts'
import { DomainError } from '../../src/errors.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationIdOf,
  newUser,
  post,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'
import { storedCounts } from '../support/stored-counts.ts'

describeEachBackend({}, (t) => {
  const SEND = '/backend-api/f/conversation'

  async function expectRefused(
    body: unknown,
    status: number,
    detailPattern: RegExp,
    headers: Record<string, string> = {},
  ) {
    const before = await storedCounts(t.db)
    const response = await post(t.app, SEND, body, headers)
    expect(response.status).toBe(status)
    expect(response.headers.get('content-type')).toContain('application/json')
    const error = (await response.json()) as { detail: string; code: string }
    expect(Object.keys(error).sort()).toEqual(['code', 'detail'])
    expect(error.code).toMatch(/^[a-z_]+$/)
    expect(error.detail).toMatch(detailPattern)
    expect(await storedCounts(t.db)).toEqual(before)
    return error
  }

  const ok = (user: string, extra: Record<string, unknown> = {}) => ({
    user_id: user,
    messages: [textMessage('hello')],
    ...extra,
  })

  describe('malformed bodies', () => {
    test('invalid JSON', () => expectRefused('{"user_id": "u", "messages": [', 422, /JSON/))
    test('a JSON array instead of an object', () => expectRefused('[1,2]', 422, /body/))
    test('an empty body', () => expectRefused('', 422, /body/))
    test('a body over 1 MB', async () => {
      const error = await expectRefused(
        { user_id: newUser(), messages: [textMessage('x'.repeat(1_100_000))] },
        413,
        /1 MB/,
      )
      expect(error.code).toBe('payload_too_large')
    })
    test('more than 100,000 characters of text', () =>
      expectRefused(
        {
          user_id: newUser(),
          messages: [
            {
              role: 'user',
              content: { content_type: 'text', parts: ['a'.repeat(60_000), 'b'.repeat(40_001)] },
            },
          ],
        },
        413,
        /100000 characters/,
      ))
  })

  describe('fields', () => {
    const user = newUser()
    test('missing user_id (development mode)', () =>
      expectRefused({ messages: [textMessage('hi')] }, 401, /user_id/))
    test('user_id of the wrong type', () =>
      expectRefused({ ...ok(user), user_id: 42 }, 422, /user_id/))
    test('user_id longer than 128 characters', () =>
      expectRefused(ok('u'.repeat(129)), 422, /user_id/))
    test('missing messages', () => expectRefused({ user_id: user }, 422, /messages/))
    test('empty messages', () => expectRefused({ user_id: user, messages: [] }, 422, /messages/))
    test('more than 16 messages', () =>
      expectRefused(
        { user_id: user, messages: Array.from({ length: 17 }, () => textMessage('a')) },
        422,
        /messages/,
      ))
    test('a role other than user', () =>
      expectRefused(
        {
          user_id: user,
          messages: [{ role: 'assistant', content: { content_type: 'text', parts: ['x'] } }],
        },
        422,
        /messages\[0\]\.role/,
      ))
    test('a missing role', () =>
      expectRefused(
        { user_id: user, messages: [{ content: { content_type: 'text', parts: ['x'] } }] },
        422,
        /role/,
      ))
    test('a content type other than text', () =>
      expectRefused(
        {
          user_id: user,
          messages: [{ role: 'user', content: { content_type: 'image', parts: ['x'] } }],
        },
        422,
        /content_type/,
      ))
    test('empty parts', () =>
      expectRefused(
        {
          user_id: user,
          messages: [{ role: 'user', content: { content_type: 'text', parts: [] } }],
        },
        422,
        /parts/,
      ))
    test('parts with no text at all', () =>
      expectRefused(
        {
          user_id: user,
          messages: [{ role: 'user', content: { content_type: 'text', parts: ['', '  '] } }],
        },
        422,
        /parts/,
      ))
    test('more than 32 parts', () =>
      expectRefused(
        {
          user_id: user,
          messages: [
            { role: 'user', content: { content_type: 'text', parts: Array(33).fill('a') } },
          ],
        },
        422,
        /parts/,
      ))
    test('a part that is not a string', () =>
      expectRefused(
        {
          user_id: user,
          messages: [{ role: 'user', content: { content_type: 'text', parts: [{ a: 1 }] } }],
        },
        422,
        /parts/,
      ))
    test('a message id longer than 128 characters', () =>
      expectRefused({ user_id: user, messages: [textMessage('x', 'i'.repeat(129))] }, 422, /id/))
    test('temperature out of range', () =>
      expectRefused(ok(user, { metadata: { temperature: 2.5 } }), 422, /temperature/))
    test('metadata that is not an object', () =>
      expectRefused(ok(user, { metadata: 'hot' }), 422, /metadata/))
    test('a conversation_id that is not a UUID', () =>
      expectRefused(ok(user, { conversation_id: "1' OR '1'='1" }), 422, /conversation_id/))
  })

  describe('conversations that are not the caller’s', () => {
    test('an unknown conversation id is 404', () =>
      expectRefused(ok(newUser(), { conversation_id: crypto.randomUUID() }), 404, /not found/i))

    test('someone else’s conversation is 404 and its cache keys are untouched', async () => {
      const owner = newUser()
      const first = await sendAndRead(t.app, ok(owner))
      const cid = conversationIdOf(first.frames)
      await t.cache.set(historyKey(cid), 'sentinel-history', 600)
      await t.cache.set(listKey(owner), 'sentinel-list', 600)
      await expectRefused(ok(newUser(), { conversation_id: cid }), 404, /not found/i)
      expect(await t.cache.get(historyKey(cid))).toBe('sentinel-history')
      expect(await t.cache.get(listKey(owner))).toBe('sentinel-list')
    })
  })

  describe('a repeated message id', () => {
    test('is 409 and stores nothing', async () => {
      const user = newUser()
      const first = await sendAndRead(t.app, {
        user_id: user,
        messages: [textMessage('a', 'dup-1')],
      })
      const cid = conversationIdOf(first.frames)
      await t.cache.set(historyKey(cid), 'sentinel', 600)
      const error = await expectRefused(
        {
          user_id: user,
          conversation_id: cid,
          messages: [textMessage('b', 'new-1'), textMessage('c', 'dup-1')],
        },
        409,
        /dup-1/,
      )
      expect(error.code).toBe('conflict')
      expect(await t.cache.get(historyKey(cid))).toBe('sentinel')
    })

    test('the service refuses it with the kind conflict, not with an HTTP status', async () => {
      const user = newUser()
      const first = await sendAndRead(t.app, {
        user_id: user,
        messages: [textMessage('a', 'dup-kind')],
      })
      const cid = conversationIdOf(first.frames)
      const refusal = await t.conversations
        .send({
          userId: user,
          conversationId: cid,
          messages: [
            {
              id: 'dup-kind',
              content: { content_type: 'text', parts: ['again'] },
              attachments: [],
              fileIds: [],
              imageIds: [],
            },
          ],
          action: 'next',
        })
        .then(
          () => undefined,
          (error: unknown) => error,
        )
      expect(refusal).toBeInstanceOf(DomainError)
      expect(refusal).toMatchObject({
        kind: 'conflict',
        detail: expect.stringMatching(/dup-kind/),
      })
      expect(refusal).not.toHaveProperty('status')
    })

    test('twice in one request is 409 too', async () => {
      await expectRefused(
        { user_id: newUser(), messages: [textMessage('a', 'same'), textMessage('b', 'same')] },
        409,
        /same/,
      )
    })
  })

  test('unknown extra fields are accepted and ignored', async () => {
    const { response, frames } = await sendAndRead(t.app, {
      ...ok(newUser()),
      action: 'next',
      // `model` is read (CONTRACT §15): `auto` is what chatgpt.com clients send.
      model: 'auto',
      history_and_training_disabled: false,
      timezone_offset_min: -60,
      messages: [{ ...textMessage('extra'), author: { role: 'user' }, metadata: {} }],
    })
    expect(response.status).toBe(200)
    expect(frames.at(-1)?.data).toBe('[DONE]')
  })
})
