// Turns in the actor: concurrent sends to one conversation run one after
// another in arrival order; a model failure mid-stream ends the stream per
// CONTRACT §4.3 and keeps the partial reply; the context list is kept.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOpenAiModel } from '../../src/conversation/model/openai.ts'
import { contextKey } from '../../src/conversation/reads/cache-keys.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationApp,
  conversationIdOf,
  dataOf,
  type Frame,
  get,
  newUser,
  post,
  recordingStatements,
  sendAndRead,
  type TestApp,
  textMessage,
} from '../support/conversation-app.ts'
import { slowLocalModel } from '../support/test-models.ts'

describeEachBackend({}, (t, backend) => {
  test('a send with nothing before it is stored claimed and starts at once; one queued behind a turn is claimed by its runner', async () => {
    const { db, statements } = recordingStatements(await backend.db())
    const counted = await conversationApp({
      backend,
      db,
      model: slowLocalModel(5),
    })
    const user = newUser()
    const claims = () => statements.filter((text) => text.includes('SET run_token')).length
    const first = await sendAndRead(counted.app, { user_id: user, messages: [textMessage('a')] })
    expect(first.text).toEndWith('data: [DONE]\n\n')
    const cid = conversationIdOf(first.frames)
    await counted.conversations.whenIdle()
    const next = await sendAndRead(counted.app, {
      user_id: user,
      conversation_id: cid,
      messages: [textMessage('b')],
    })
    expect(next.text).toEndWith('data: [DONE]\n\n')
    await counted.conversations.whenIdle()
    expect(claims()).toBe(0)
    // Two at once: the first starts at once, the second queues behind it.
    const [third, fourth] = await Promise.all(
      ['c', 'd'].map((text) =>
        sendAndRead(counted.app, {
          user_id: user,
          conversation_id: cid,
          messages: [textMessage(text)],
        }),
      ),
    )
    expect(third?.text).toEndWith('data: [DONE]\n\n')
    expect(fourth?.text).toEndWith('data: [DONE]\n\n')
    await counted.conversations.whenIdle()
    expect(claims()).toBe(1)
    const stored = await history(counted, user, cid)
    expect(stored.messages.map((message) => message.content.parts[0]?.slice(0, 1))).toEqual([
      'a',
      expect.any(String),
      'b',
      expect.any(String),
      'c',
      expect.any(String),
      'd',
      expect.any(String),
    ])
    await counted.conversations.close(0)
  })

  test('the lease a send takes stays held however long its accept takes', async () => {
    const db = await backend.db()
    let open: () => void = () => {}
    let entered: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      open = resolve
    })
    const accepting = new Promise<void>((resolve) => {
      entered = resolve
    })
    // Every send accepts in a transaction: once armed (after the first send), one waits at its start.
    let armed = false
    const slow = {
      ...db,
      transaction: (async (fn) => {
        if (armed) {
          entered()
          await gate
        }
        return await db.transaction(fn)
      }) as typeof db.transaction,
    }
    const app = await conversationApp({ backend, db: slow, env: { TURN_LEASE_MS: '100' } })
    const user = newUser()
    const first = await sendAndRead(app.app, { user_id: user, messages: [textMessage('a')] })
    const cid = conversationIdOf(first.frames)
    await app.conversations.whenIdle()
    armed = true
    const sending = sendAndRead(app.app, {
      user_id: user,
      conversation_id: cid,
      messages: [textMessage('b')],
    })
    await accepting
    // Four lease lifetimes: what is under test is that the lease does not expire meanwhile.
    await Bun.sleep(400)
    const state = await backend.state()
    expect(await state.leases.acquire(cid, 60_000)).toBeUndefined()
    open()
    const { text } = await sending
    expect(text).toEndWith('data: [DONE]\n\n')
    await app.conversations.close(0)
  })

  interface History {
    messages: { id: string; role: string; content: { parts: string[] } }[]
  }
  const history = async (app: TestApp, user: string, cid: string) =>
    (await (
      await get(app.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
    ).json()) as History

  test('concurrent sends to one conversation are applied in arrival order, none lost', async () => {
    const user = newUser()
    const first = await sendAndRead(t.app, { user_id: user, messages: [textMessage('start')] })
    const cid = conversationIdOf(first.frames)
    const sends = Array.from({ length: 6 }, (_, i) =>
      post(t.app, '/backend-api/f/conversation', {
        user_id: user,
        conversation_id: cid,
        messages: [textMessage(`message ${i}`, `c-${i}`)],
      }).then((response) => response.text()),
    )
    const bodies = await Promise.all(sends)
    for (const body of bodies) expect(body.endsWith('data: [DONE]\n\n')).toBe(true)
    const { messages } = await history(t, user, cid)
    expect(messages).toHaveLength(14)
    // Strictly alternating: no reply interleaves with another send.
    expect(messages.map((m) => m.role)).toEqual(
      Array.from({ length: 14 }, (_, i) => (i % 2 ? 'assistant' : 'user')),
    )
    expect(messages.filter((m) => m.role === 'user').map((m) => m.id)).toEqual([
      messages[0]?.id ?? 'missing',
      'c-0',
      'c-1',
      'c-2',
      'c-3',
      'c-4',
      'c-5',
    ])
  })

  describe('the context list', () => {
    test('holds the last 20 messages as JSON, expiring after a day', async () => {
      const user = newUser()
      const first = await sendAndRead(t.app, { user_id: user, messages: [textMessage('m0')] })
      const cid = conversationIdOf(first.frames)
      for (let i = 1; i < 12; i++)
        await sendAndRead(t.app, {
          user_id: user,
          conversation_id: cid,
          messages: [textMessage(`m${i}`)],
        })
      const entries = await t.cache.listAll(contextKey(cid))
      expect(entries).toHaveLength(20)
      const ttl = await t.cache.ttl(contextKey(cid))
      expect(ttl).toBeGreaterThan(86_000)
      expect(ttl).toBeLessThanOrEqual(86_400)
      const stored = (await history(t, user, cid)).messages.slice(-20)
      expect(entries.map((e) => (JSON.parse(e) as { id: string }).id)).toEqual(
        stored.map((m) => m.id),
      )
    })

    test('is rebuilt from the database when the cache lost it', async () => {
      const user = newUser()
      const first = await sendAndRead(t.app, {
        user_id: user,
        messages: [textMessage('remember this')],
      })
      const cid = conversationIdOf(first.frames)
      await t.cache.flush()
      await sendAndRead(t.app, {
        user_id: user,
        conversation_id: cid,
        messages: [textMessage('and this')],
      })
      const entries = (await t.cache.listAll(contextKey(cid))).map(
        (e) => JSON.parse(e) as { role: string },
      )
      expect(entries.map((e) => e.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
    })
  })

  describe('a model that fails mid-stream', () => {
    let server: ReturnType<typeof Bun.serve>
    let failing: TestApp
    beforeAll(async () => {
      // A small OpenAI-compatible server that sends two chunks, then an error.
      server = Bun.serve({
        port: 0,
        hostname: '127.0.0.1',
        fetch: () =>
          new Response(
            'data: {"choices":[{"delta":{"content":"Partial "}}]}\n\n' +
              'data: {"choices":[{"delta":{"content":"answer"}}]}\n\n' +
              'data: {"error":{"message":"upstream overloaded"}}\n\n',
            { headers: { 'content-type': 'text/event-stream' } },
          ),
      })
      failing = await conversationApp({
        backend,
        model: createOpenAiModel({
          slug: 'gpt-test',
          baseUrl: `http://127.0.0.1:${server.port}`,
          timeoutMs: 2_000,
        }),
      })
    })
    afterAll(() => server.stop(true))

    test('streams the error item, a partial completion, and stores the partial reply', async () => {
      const user = newUser()
      const { response, frames } = await sendAndRead(failing.app, {
        user_id: user,
        messages: [textMessage('hi')],
      })
      expect(response.status).toBe(200)
      const cid = conversationIdOf(frames)
      const aid = dataOf<{ v: { message: { id: string; metadata: { model_slug: string } } } }>(
        frames[3],
      ).v.message
      expect(aid.metadata.model_slug).toBe('gpt-test')
      // The first message names the conversation (this server writes no title): its item
      // streams once, as soon as known - mid-reply or just before the ending, never after it.
      const isTitle = (f: Frame) => f.data.startsWith('{"type":"title_generation"')
      expect(frames.filter(isTitle).map((f) => f.raw)).toEqual([
        `data: {"type":"title_generation","title":"hi","conversation_id":"${cid}"}\n\n`,
      ])
      expect(frames.findIndex(isTitle)).toBeLessThan(frames.length - 3)
      const rest = frames.filter((f) => !isTitle(f))
      const tail = rest.slice(-5).map((f) => f.raw)
      expect(tail[0]).toBe(
        `event: delta\ndata: {"p":"","o":"patch","v":[{"p":"/message/content/parts/0","o":"append","v":"answer"}]}\n\n`,
      )
      const error = dataOf<Record<string, string>>(rest.at(-4))
      expect(Object.keys(error)).toEqual([
        'type',
        'conversation_id',
        'message_id',
        'code',
        'detail',
        'error',
      ])
      expect(error).toMatchObject({
        type: 'error',
        conversation_id: cid,
        message_id: aid.id,
        code: 'model_error',
      })
      expect(error.detail).toContain('upstream overloaded')
      // The top-level `error` deployed clients read (CONTRACT §9) is the detail.
      expect(error.error).toBe(error.detail)
      expect(tail[2]).toBe(
        'event: delta\ndata: {"p":"","o":"patch","v":[{"p":"/message/status","o":"replace","v":"finished_partial_completion"},{"p":"/message/end_turn","o":"replace","v":false},{"p":"/message/metadata","o":"append","v":{"is_complete":true,"finish_details":{"type":"error"}}}]}\n\n',
      )
      expect(tail[3]).toBe(
        `data: {"type":"message_stream_complete","conversation_id":"${cid}"}\n\n`,
      )
      expect(tail[4]).toBe('data: [DONE]\n\n')
      const { messages } = await history(failing, user, cid)
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant'])
      expect(messages[1]?.content.parts).toEqual(['Partial answer'])
    })
  })
})
