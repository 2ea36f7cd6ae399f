// chatgpt.com fidelity (CONTRACT §17): gpt4free's new-conversation send (a
// made-up parent_message_id, no conversation_id) after its prepare and
// sentinel calls; those calls' answers and identity; and the detail as
// chatgpt.com's conversation object, checked against its documented schema.
// On every backend.
import { beforeAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { Value } from '@sinclair/typebox/value'
import { decodeJwt } from 'jose'
import { ConversationDetail } from '../../src/conversation/tree/detail-schema.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import { appBackends } from '../support/backends.ts'
import {
  conversationApp,
  conversationIdOf,
  framesOf,
  newUser,
  post,
  sendAndRead,
  type TestApp,
  textMessage,
} from '../support/conversation-app.ts'
import { bearerFor } from '../support/identity-token.ts'
import { detailOf } from '../support/transfer.ts'

const PREPARE = '/backend-api/f/conversation/prepare'
const REQUIREMENTS = '/backend-api/sentinel/chat-requirements'
const SEND = '/backend-api/f/conversation'

/** What gpt4free's OpenaiChat provider sends to start a conversation (its own fields are ignored). */
function gpt4freeBody(text: string) {
  return {
    action: 'next',
    messages: [
      {
        id: randomUUID(),
        author: { role: 'user' },
        content: { content_type: 'text', parts: [text] },
        metadata: { serialization_metadata: { custom_symbol_offsets: [] } },
        create_time: Date.now() / 1000,
      },
    ],
    parent_message_id: randomUUID(),
    model: 'auto',
    timezone_offset_min: -120,
    timezone: 'Europe/Berlin',
    history_and_training_disabled: false,
    conversation_mode: { kind: 'primary_assistant' },
    enable_message_followups: true,
    system_hints: [],
    supports_buffering: true,
    supported_encodings: ['v1'],
    client_contextual_info: { is_dark_mode: false, time_since_loaded: 12 },
    paragen_cot_summary_display_override: 'allow',
    force_parallel_switch: 'auto',
  }
}

describeEachBackend({}, (t) => {
  describe("gpt4free's new conversation", () => {
    test('prepare, chat requirements, then a send under a made-up parent: a conversation at the top', async () => {
      const user = newUser()
      const headers = { 'x-user-id': user }
      const prepared = await post(
        t.app,
        PREPARE,
        { action: 'next', parent_message_id: randomUUID(), model: 'auto' },
        headers,
      )
      expect(prepared.status).toBe(200)
      const prepare = (await prepared.json()) as { status: string; conduit_token: string }
      expect(prepare.status).toBe('ok')
      expect(decodeJwt(prepare.conduit_token)).toMatchObject({ sub: user })

      const required = await post(t.app, REQUIREMENTS, { p: 'gAAAAACabc' }, headers)
      expect(required.status).toBe(200)
      const requirements = (await required.json()) as Record<string, unknown>
      expect(requirements).toEqual({
        persona: 'chatgpt-paid',
        token: expect.any(String),
        proofofwork: { required: false },
        turnstile: { required: false },
      })

      const body = gpt4freeBody('hello from gpt4free')
      const sent = await post(t.app, SEND, body, {
        ...headers,
        'openai-sentinel-chat-requirements-token': requirements.token as string,
        'x-conduit-token': prepare.conduit_token,
      })
      expect(sent.status).toBe(200)
      const frames = framesOf(await sent.text())
      expect(frames.at(-1)?.data).toBe('[DONE]')
      const cid = conversationIdOf(frames)
      await t.conversations.whenIdle()
      const detail = await detailOf(t.app, user, cid)
      const asked = body.messages[0]?.id as string
      expect(detail.mapping['client-created-root']?.children).toEqual([asked])
      expect(detail.messages.map((message) => message.parent_id)).toEqual([null, asked])
      expect(detail.title).toBe('hello from gpt4free')
    })

    test('in an existing conversation an unknown parent is still 404', async () => {
      const user = newUser()
      const first = await sendAndRead(t.app, { user_id: user, messages: [textMessage('one')] })
      const cid = conversationIdOf(first.frames)
      await t.conversations.whenIdle()
      const response = await post(t.app, SEND, {
        ...gpt4freeBody('two'),
        conversation_id: cid,
        user_id: user,
      })
      expect(response.status).toBe(404)
      expect((await detailOf(t.app, user, cid)).messages).toHaveLength(2)
    })
  })

  describe('prepare and chat requirements', () => {
    test('each path answers that nothing is required; /prepare also a prepare_token', async () => {
      const user = newUser()
      for (const suffix of ['', '/prepare', '/finalize']) {
        const response = await post(t.app, `${REQUIREMENTS}${suffix}`, { user_id: user })
        expect(response.status).toBe(200)
        const answer = (await response.json()) as Record<string, unknown>
        expect(answer).toMatchObject({
          persona: 'chatgpt-paid',
          proofofwork: { required: false },
          turnstile: { required: false },
        })
        expect(answer.token).toBeString()
        expect(Boolean(answer.prepare_token)).toBe(suffix === '/prepare')
      }
      // Tokens are opaque and fresh.
      const tokens = await Promise.all(
        [1, 2].map(
          async () =>
            (
              (await (await post(t.app, REQUIREMENTS, { user_id: user })).json()) as {
                token: string
              }
            ).token,
        ),
      )
      expect(tokens[0]).not.toBe(tokens[1])
    })

    test('identity as for sends: none is 401, a bad body 422', async () => {
      for (const path of [
        PREPARE,
        REQUIREMENTS,
        `${REQUIREMENTS}/prepare`,
        `${REQUIREMENTS}/finalize`,
      ]) {
        const anonymous = await post(t.app, path, {})
        expect({ path, status: anonymous.status }).toEqual({ path, status: 401 })
        expect(Object.keys((await anonymous.json()) as object).sort()).toEqual(['code', 'detail'])
        const bad = await post(t.app, path, '{"user_id":', { 'x-user-id': newUser() })
        expect({ path, status: bad.status }).toEqual({ path, status: 422 })
        const wrong = await post(t.app, path, { user_id: 7 })
        expect({ path, status: wrong.status }).toEqual({ path, status: 422 })
      }
    })

    test('a conduit token cannot resume a stream', async () => {
      const user = newUser()
      const sent = await sendAndRead(t.app, { user_id: user, messages: [textMessage('hi')] })
      const cid = conversationIdOf(sent.frames)
      await t.conversations.whenIdle()
      const { conduit_token } = (await (await post(t.app, PREPARE, { user_id: user })).json()) as {
        conduit_token: string
      }
      const resumed = await post(
        t.app,
        '/backend-api/f/conversation/resume',
        { conversation_id: cid, offset: 0 },
        { 'x-conduit-token': conduit_token, 'x-user-id': user },
      )
      expect(resumed.status).toBe(401)
    })
  })

  describe('the detail is chatgpt.com’s conversation object', () => {
    test('fields, schema, creation order and times that grow within a turn', async () => {
      const user = newUser()
      const first = await sendAndRead(t.app, {
        user_id: user,
        messages: [textMessage('first', 'f1'), textMessage('second', 'f2')],
      })
      const cid = conversationIdOf(first.frames)
      await t.conversations.whenIdle()
      await sendAndRead(t.app, {
        user_id: user,
        conversation_id: cid,
        messages: [textMessage('third', 'f3')],
      })
      await t.conversations.whenIdle()
      const detail = await detailOf(t.app, user, cid)
      expect(Value.Errors(ConversationDetail, detail).First()).toBeUndefined()
      expect(detail).toMatchObject({
        id: cid,
        conversation_id: cid,
        title: 'first',
        default_model_slug: 'local-echo',
        is_archived: false,
        moderation_results: [],
      })
      const keys = Object.keys(detail.mapping)
      expect(keys[0]).toBe('client-created-root')
      expect(keys.slice(1, 3)).toEqual(['f1', 'f2'])
      expect(keys[4]).toBe('f3')
      // Each message is later than the one before it; the conversation spans them.
      const times = keys.slice(1).map((key) => detail.mapping[key]?.message?.create_time ?? 0)
      for (let index = 1; index < times.length; index++)
        expect((times[index] as number) > (times[index - 1] as number)).toBe(true)
      expect(detail.create_time).toBe(times[0] as number)
      expect(detail.update_time).toBeGreaterThanOrEqual(times.at(-1) as number)
      for (const key of keys.slice(1)) {
        const message = detail.mapping[key]?.message
        expect(message?.update_time).toBeGreaterThanOrEqual(message?.create_time ?? 0)
      }
    })

    test('title and archive state follow a rename and an archive', async () => {
      const user = newUser()
      const sent = await sendAndRead(t.app, { user_id: user, messages: [textMessage('hi')] })
      const cid = conversationIdOf(sent.frames)
      await t.conversations.whenIdle()
      await detailOf(t.app, user, cid) // cached now
      const response = await t.app.handle(
        new Request(`http://localhost/backend-api/conversation/${cid}`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json', 'x-user-id': user },
          body: JSON.stringify({ title: 'Renamed', is_archived: true }),
        }),
      )
      expect(response.status).toBe(200)
      expect(await detailOf(t.app, user, cid)).toMatchObject({
        title: 'Renamed',
        is_archived: true,
      })
    })
  })
})

describe('with JWT auth', () => {
  const [backend] = appBackends()
  let t: TestApp
  beforeAll(async () => {
    if (!backend) throw new Error('no backend')
    t = await conversationApp({
      backend,
      env: { AUTH_JWT_SECRET: 'fidelity-secret-of-at-least-32-bytes' },
    })
  }, 60_000)

  test("the handshake's user is the token's; none is 401, another body user_id 403", async () => {
    const bearer = await bearerFor('jwt-user', 'fidelity-secret-of-at-least-32-bytes')
    const ok = await post(t.app, PREPARE, {}, bearer)
    expect(ok.status).toBe(200)
    expect(decodeJwt(((await ok.json()) as { conduit_token: string }).conduit_token).sub).toBe(
      'jwt-user',
    )
    expect((await post(t.app, REQUIREMENTS, { user_id: 'jwt-user' })).status).toBe(401)
    expect((await post(t.app, REQUIREMENTS, { user_id: 'someone' }, bearer)).status).toBe(403)
  })
})
