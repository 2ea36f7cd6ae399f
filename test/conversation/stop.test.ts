// Stop and stream status (CONTRACT §12), on every backend, with a local model
// slow enough (20 ms a chunk) to act in the middle of a reply:
// - POST /backend-api/stop_conversation mid-reply answers {stopped, message_id};
//   the sender's stream ends with the `interrupted` completion patch (no error
//   item), message_stream_complete and [DONE], well before the full reply, and
//   the stored reply is exactly the text streamed;
// - with nothing running it answers {stopped:false}, and a stop leaves the
//   turns queued behind the stopped one to run normally;
// - GET /backend-api/conversation/{id}/stream_status mid-reply gives a fresh
//   resume token and an offset that resume byte-exactly, and streaming:false
//   (with chatgpt.com's `status`, CONTRACT §17)
//   once the turn is over;
// - bad input to both routes is a §3 error that changes nothing: the running
//   turn it named still completes normally.
// Every wait is on an event (an SSE item, whenIdle), never a sleep.
import { expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { decodeJwt } from 'jose'
import { localReply, splitIntoChunks } from '../../src/conversation/model/local.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationApp,
  dataOf,
  type Frame,
  framesOf,
  get,
  newUser,
  post,
  textMessage,
} from '../support/conversation-app.ts'
import { sseReader } from '../support/sse-reader.ts'
import { LONG_MESSAGE, slowLocalModel } from '../support/test-models.ts'

const SEND = '/backend-api/f/conversation'
const STOP = '/backend-api/stop_conversation'
const RESUME = '/backend-api/f/conversation/resume'
const statusPath = (cid: string) => `/backend-api/conversation/${cid}/stream_status`

/** The completion patch of a reply cut short by a stop (CONTRACT §12), as one SSE frame. */
const INTERRUPTED_COMPLETION =
  'event: delta\ndata: {"p":"","o":"patch","v":[' +
  '{"p":"/message/status","o":"replace","v":"finished_successfully"},' +
  '{"p":"/message/end_turn","o":"replace","v":true},' +
  '{"p":"/message/metadata","o":"append","v":{"is_complete":true,"finish_details":{"type":"interrupted"}}}]}\n\n'

/** The completion patch of a reply the model finished (CONTRACT §4.2). */
const STOP_COMPLETION = INTERRUPTED_COMPLETION.replace('"type":"interrupted"', '"type":"stop"')

/** The full reply the local model gives to `messages` (alternating user, assistant, …). */
const fullReply = (...messages: string[]) =>
  localReply(messages.map((content, i) => ({ role: i % 2 === 0 ? 'user' : 'assistant', content })))

/** The chunk of an append item, else undefined. */
function chunkOf(frame: Frame): string | undefined {
  if (frame.event !== 'delta') return undefined
  const item = dataOf<{ o: string; v: { p: string; o: string; v: unknown }[] }>(frame)
  const op = item.o === 'patch' && item.v.length === 1 ? item.v[0] : undefined
  return op?.p === '/message/content/parts/0' && op.o === 'append' && typeof op.v === 'string'
    ? op.v
    : undefined
}
const isAppend = (frame: Frame) => chunkOf(frame) !== undefined
const appendedText = (frames: Frame[]) => frames.map((f) => chunkOf(f) ?? '').join('')

/** A JSON item's `type` (undefined for deltas and [DONE]). */
const typeOf = (frame: Frame) =>
  frame.event === undefined && frame.data !== '[DONE]'
    ? dataOf<{ type?: string }>(frame).type
    : undefined

/** The items after a turn's last append, less §11's title item (§23: it may come before the ending). */
const endingOf = (frames: Frame[]) =>
  frames
    .slice(frames.findLastIndex(isAppend) + 1)
    .filter((frame) => typeOf(frame) !== 'title_generation')
    .map((frame) => frame.raw)

const streamCompleteFrame = (cid: string) =>
  `data: {"type":"message_stream_complete","conversation_id":"${cid}"}\n\n`

/** What the add item (item 3 of a one-message send) names. */
function addedReply(frames: Frame[]) {
  const add = dataOf<{ o: string; v: { message: { id: string }; conversation_id: string } }>(
    frames[3],
  )
  expect(add.o).toBe('add')
  return { aid: add.v.message.id, cid: add.v.conversation_id }
}

describeEachBackend({ model: slowLocalModel() }, (t, backend) => {
  /** Sends one message and reads its stream up to the first append item. */
  async function startTurn(user: string, text: string, conversationId?: string) {
    const response = await post(t.app, SEND, {
      user_id: user,
      ...(conversationId ? { conversation_id: conversationId } : {}),
      messages: [textMessage(text)],
    })
    const stream = sseReader(response)
    const frames = await stream.until((f) => f.some(isAppend), 'the first append item')
    return { stream, ...addedReply(frames) }
  }

  const stop = (body: unknown, user?: string) =>
    post(t.app, STOP, body, user ? { 'x-user-id': user } : {})

  const streamStatus = (cid: string, user?: string) =>
    get(t.app, statusPath(cid), user ? { 'x-user-id': user } : {})

  /** The stored messages of a conversation: role and text, in order. */
  async function history(cid: string, user: string) {
    const response = await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
    expect(response.status).toBe(200)
    const body = (await response.json()) as {
      messages: { id: string; role: string; content: { parts: string[] } }[]
    }
    return body.messages.map((m) => ({ id: m.id, role: m.role, text: m.content.parts.join('') }))
  }

  /** A §3 error body with exactly detail and code. */
  async function expectError(response: Response, status: number, code: string, detail: RegExp) {
    expect(response.status).toBe(status)
    expect(response.headers.get('content-type')).toContain('application/json')
    const body = (await response.json()) as { detail: string; code: string }
    expect(Object.keys(body).sort()).toEqual(['code', 'detail'])
    expect(body.code).toBe(code)
    expect(body.detail).toMatch(detail)
  }

  test('a stop mid-reply ends the stream as interrupted and stores exactly what streamed', async () => {
    const user = newUser()
    const { stream, aid, cid } = await startTurn(user, LONG_MESSAGE)

    const stopped = await stop({ conversation_id: cid }, user)
    const stoppedAt = Date.now()
    expect(stopped.status).toBe(200)
    expect(await stopped.json()).toStrictEqual({ stopped: true, message_id: aid })

    const body = await stream.rest()
    expect(Date.now() - stoppedAt).toBeLessThan(2_000)
    const frames = framesOf(body)
    // Prefix (the title of this new conversation known at once, CONTRACT §23), then only
    // append items, then the interrupted ending; no error item.
    expect(typeOf(frames[4] as Frame)).toBe('title_generation')
    const firstAppend = frames.findIndex(isAppend)
    const lastAppend = frames.findLastIndex(isAppend)
    expect(firstAppend).toBe(6)
    expect(frames.slice(firstAppend, lastAppend + 1).every(isAppend)).toBe(true)
    expect(frames.some((frame) => typeOf(frame) === 'error')).toBe(false)
    expect(endingOf(frames)).toEqual([
      INTERRUPTED_COMPLETION,
      streamCompleteFrame(cid),
      'data: [DONE]\n\n',
    ])

    // Cut well short of the full reply…
    const appends = frames.filter(isAppend).length
    const full = splitIntoChunks(fullReply(LONG_MESSAGE))
    expect(appends).toBeGreaterThanOrEqual(1)
    expect(appends).toBeLessThan(full.length / 2)
    // …and the stored reply is exactly the text streamed.
    const streamed = appendedText(frames)
    expect(full.join('').startsWith(streamed)).toBe(true)
    expect(await history(cid, user)).toMatchObject([
      { role: 'user', text: LONG_MESSAGE },
      { id: aid, role: 'assistant', text: streamed },
    ])
    expect((await history(cid, user)).length).toBe(2)
  })

  test('a stop with nothing running answers stopped:false and changes nothing', async () => {
    const user = newUser()
    const { stream, cid } = await startTurn(user, 'a short one')
    await stream.rest()
    await t.conversations.whenIdle()
    const before = await history(cid, user)

    const response = await stop({ conversation_id: cid }, user)
    expect(response.status).toBe(200)
    expect(await response.json()).toStrictEqual({ stopped: false })
    expect(await history(cid, user)).toEqual(before)
  })

  test('a stop leaves the turns queued behind the stopped one to run', async () => {
    const user = newUser()
    const a = await startTurn(user, LONG_MESSAGE)
    // B is accepted while A runs, so it queues behind it.
    const b = sseReader(
      await post(t.app, SEND, {
        user_id: user,
        conversation_id: a.cid,
        messages: [textMessage('and what comes after?')],
      }),
    )
    const bPrefix = await b.until((f) => f.length >= 4, 'the add item of B')
    const bReply = addedReply(bPrefix)
    expect(bReply.cid).toBe(a.cid)

    const stopped = await stop({ conversation_id: a.cid }, user)
    expect(await stopped.json()).toStrictEqual({ stopped: true, message_id: a.aid })

    const aFrames = framesOf(await a.stream.rest())
    expect(endingOf(aFrames)).toEqual([
      INTERRUPTED_COMPLETION,
      streamCompleteFrame(a.cid),
      'data: [DONE]\n\n',
    ])
    const aText = appendedText(aFrames)

    // B runs to its normal end, answering a context that holds A's cut reply.
    const bFrames = framesOf(await b.rest())
    expect(bFrames.some((frame) => typeOf(frame) === 'error')).toBe(false)
    expect(endingOf(bFrames)).toEqual([
      STOP_COMPLETION,
      streamCompleteFrame(a.cid),
      'data: [DONE]\n\n',
    ])
    const bText = appendedText(bFrames)
    expect(bText).toBe(fullReply(LONG_MESSAGE, aText, 'and what comes after?'))

    await t.conversations.whenIdle()
    expect(await history(a.cid, user)).toMatchObject([
      { role: 'user', text: LONG_MESSAGE },
      { id: a.aid, role: 'assistant', text: aText },
      { role: 'user', text: 'and what comes after?' },
      { id: bReply.aid, role: 'assistant', text: bText },
    ])
    expect((await history(a.cid, user)).length).toBe(4)
    const after = await stop({ conversation_id: a.cid }, user)
    expect(await after.json()).toStrictEqual({ stopped: false })
  })

  test('stream_status mid-reply gives a token and offset that resume byte-exactly', async () => {
    const user = newUser()
    const { stream, aid, cid } = await startTurn(user, LONG_MESSAGE)

    const response = await streamStatus(cid, user)
    expect(response.status).toBe(200)
    const status = (await response.json()) as Record<string, unknown>
    expect(Object.keys(status).sort()).toEqual([
      'conversation_id',
      'message_id',
      'offset',
      'status',
      'streaming',
      'token',
    ])
    expect(status).toMatchObject({
      conversation_id: cid,
      status: 'IS_STREAMING',
      streaming: true,
      message_id: aid,
    })
    const { token, offset } = status as { token: string; offset: number }
    // At least the prefix and the first append item had streamed.
    expect(Number.isInteger(offset)).toBe(true)
    expect(offset).toBeGreaterThanOrEqual(6)
    expect(decodeJwt(token)).toMatchObject({ sub: user, conversation_id: cid, message_id: aid })

    // Resume live, while the original sender keeps reading to the end.
    const resumed = sseReader(
      await post(t.app, RESUME, { conversation_id: cid, offset }, { 'x-conduit-token': token }),
    )
    const [original, rest] = await Promise.all([stream.rest(), resumed.rest()])
    const originalFrames = framesOf(original)
    expect(offset).toBeLessThan(originalFrames.length)
    expect(original).toBe(
      originalFrames
        .slice(0, offset)
        .map((f) => f.raw)
        .join('') + rest,
    )
    expect(endingOf(originalFrames)).toEqual([
      STOP_COMPLETION,
      streamCompleteFrame(cid),
      'data: [DONE]\n\n',
    ])

    await t.conversations.whenIdle()
    const idle = await streamStatus(cid, user)
    expect(idle.status).toBe(200)
    expect(await idle.json()).toStrictEqual({
      conversation_id: cid,
      status: 'NOT_STREAMING',
      streaming: false,
    })
  })

  test('bad stop and stream_status requests are §3 errors and leave the running turn alone', async () => {
    const owner = newUser()
    const stranger = newUser()
    const { stream, cid } = await startTurn(owner, LONG_MESSAGE)

    // stop_conversation
    await expectError(
      await stop({ conversation_id: 'not-a-uuid' }, owner),
      422,
      'validation_error',
      /conversation_id/,
    )
    await expectError(await stop({}, owner), 422, 'validation_error', /conversation_id/)
    await expectError(
      await post(t.app, STOP, `{"conversation_id": "${cid}"`, { 'x-user-id': owner }),
      422,
      'invalid_json',
      /JSON/,
    )
    await expectError(
      await stop({ conversation_id: cid }, stranger),
      404,
      'not_found',
      /not found/i,
    )
    await expectError(
      await stop({ conversation_id: randomUUID() }, owner),
      404,
      'not_found',
      /not found/i,
    )
    await expectError(await stop({ conversation_id: cid }), 401, 'unauthorized', /./)

    // stream_status
    await expectError(
      await streamStatus('not-a-uuid', owner),
      422,
      'validation_error',
      /conversation_id/,
    )
    await expectError(await streamStatus(cid, stranger), 404, 'not_found', /not found/i)
    await expectError(await streamStatus(randomUUID(), owner), 404, 'not_found', /not found/i)
    await expectError(await streamStatus(cid), 401, 'unauthorized', /./)

    // All of that happened while the turn ran, and it runs on to its normal end.
    const running = (await (await streamStatus(cid, owner)).json()) as { streaming: boolean }
    expect(running.streaming).toBe(true)
    const frames = framesOf(await stream.rest())
    expect(frames.some((frame) => typeOf(frame) === 'error')).toBe(false)
    expect(endingOf(frames)).toEqual([
      STOP_COMPLETION,
      streamCompleteFrame(cid),
      'data: [DONE]\n\n',
    ])
    const full = fullReply(LONG_MESSAGE)
    expect(frames.filter(isAppend).length).toBe(splitIntoChunks(full).length)
    expect(appendedText(frames)).toBe(full)
    await t.conversations.whenIdle()
    expect(await history(cid, owner)).toMatchObject([
      { role: 'user', text: LONG_MESSAGE },
      { role: 'assistant', text: full },
    ])
  })

  // A turn the sender already sees (its add item streamed, stream_status says
  // streaming:true) whose runner has not claimed it yet: the stop is recorded
  // on the turn and the runner ends it when it claims it. On real
  // Postgres+Redis this is the usual case for a stop sent right after the add
  // item; the claim is held here to make it deterministic.
  test('a stop before any runner claims a queued turn still stops it', async () => {
    // Short leases, so the sweep soon takes up what the "other instance" leaves.
    const held = await conversationApp({
      backend,
      env: { TURN_LEASE_MS: '200' },
      model: slowLocalModel(),
    })
    const state = await backend.state()
    const user = newUser()
    try {
      const first = framesOf(
        await (await post(held.app, SEND, { user_id: user, messages: [textMessage('hi')] })).text(),
      )
      expect(first.at(-1)?.data).toBe('[DONE]')
      const { cid: conversation } = addedReply(first)
      await held.conversations.whenIdle()
      // Another instance holds the conversation's lease: the send queues, claimed by nobody.
      const other = await state.leases.acquire(conversation, 60_000)
      expect(other).toBeDefined()
      const stream = sseReader(
        await post(held.app, SEND, {
          user_id: user,
          conversation_id: conversation,
          messages: [textMessage(LONG_MESSAGE)],
        }),
      )
      const { aid, cid } = addedReply(await stream.until((f) => f.length >= 4, 'the add item'))
      const status = await get(held.app, statusPath(cid), { 'x-user-id': user })
      expect(await status.json()).toMatchObject({ streaming: true, message_id: aid })

      const stopped = await post(held.app, STOP, { conversation_id: cid }, { 'x-user-id': user })
      expect(await stopped.json()).toStrictEqual({ stopped: true, message_id: aid })
      // The other instance goes away; this one's sweep takes the turn up.
      if (other) await state.leases.release(other)
      held.conversations.startRecovery()
      const frames = framesOf(await stream.rest())
      // The model never ran: right after the four first items, the interrupted ending.
      expect(frames.slice(4).map((frame) => frame.raw)).toEqual([
        INTERRUPTED_COMPLETION,
        streamCompleteFrame(cid),
        'data: [DONE]\n\n',
      ])
      await held.conversations.whenIdle()
      expect((await history(cid, user)).slice(2)).toMatchObject([
        { role: 'user', text: LONG_MESSAGE },
        { role: 'assistant', text: '' },
      ])
    } finally {
      await held.conversations.close(0)
    }
  })
})
