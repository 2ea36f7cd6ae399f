// Deleting a conversation while a reply streams in it (CONTRACT §11, §12), on
// every backend, with a local model slow enough (20 ms a chunk) to act in the
// middle of a reply: the running turn is stopped first (its stream ends as a
// stop ends it), a turn queued behind it ends too, and then the conversation,
// its messages, cached keys and turn logs are gone: reads, stream status and
// resumes answer 404. The same holds for deleting all of a user's
// conversations, and for a delete sent to another instance than the one
// running the turn. Every wait is on an event (an SSE item, whenIdle), never a sleep.
import { expect, test } from 'bun:test'
import { contextKey, historyKey, listKey } from '../../src/conversation/reads/cache-keys.ts'
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

const isAppend = (frame: Frame) =>
  frame.event === 'delta' && frame.data.includes('"/message/content/parts/0","o":"append"')

/** How the stream of a stopped turn ends (CONTRACT §12). */
function expectInterruptedEnding(frames: Frame[]) {
  const data = frames.map((frame) => frame.data)
  expect(data.at(-1)).toBe('[DONE]')
  expect(data.at(-2)).toContain('"type":"message_stream_complete"')
  const completion = data.findLast((d) => d.includes('"finish_details"')) ?? ''
  expect(completion).toContain('"finish_details":{"type":"interrupted"}')
  expect(data.some((d) => d.includes('"type":"error"'))).toBe(false)
}

describeEachBackend({ model: slowLocalModel() }, (t, backend) => {
  const asUser = (user: string) => ({ 'x-user-id': user })
  const patch = (path: string, body: unknown, user: string) =>
    t.app.handle(
      new Request(`http://localhost/backend-api${path}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', ...asUser(user) },
        body: JSON.stringify(body),
      }),
    )

  /** Sends one message; the stream and what its first items name. */
  async function sendMessage(user: string, text: string, conversationId?: string) {
    const response = await post(t.app, '/backend-api/f/conversation', {
      user_id: user,
      ...(conversationId ? { conversation_id: conversationId } : {}),
      messages: [textMessage(text)],
    })
    const stream = sseReader(response)
    const frames = await stream.until((f) => f.length >= 4)
    const token = dataOf<{ token: string; conversation_id: string }>(frames[1])
    const add = dataOf<{ v: { message: { id: string } } }>(frames[3])
    return { stream, cid: token.conversation_id, aid: add.v.message.id, token: token.token }
  }

  /** Everything a deleted conversation leaves behind answers 404 or is gone. */
  async function expectGone(user: string, cid: string, turns: { aid: string; token: string }[]) {
    expect((await get(t.app, `/backend-api/conversation/${cid}`, asUser(user))).status).toBe(404)
    expect(
      (await get(t.app, `/backend-api/conversation/${cid}/stream_status`, asUser(user))).status,
    ).toBe(404)
    for (const { aid, token } of turns) {
      expect(await t.state.logs.info(aid)).toBeUndefined()
      const resumed = await post(
        t.app,
        '/backend-api/f/conversation/resume',
        { conversation_id: cid, offset: 0 },
        { 'x-conduit-token': token },
      )
      expect(resumed.status).toBe(404)
    }
    expect(await t.cache.get(historyKey(cid))).toBeNull()
    expect(await t.cache.get(listKey(user))).toBeNull()
    expect(await t.cache.listAll(contextKey(cid))).toEqual([])
    const rows = await t.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM messages WHERE conversation_id = $1',
      [cid],
    )
    expect(rows[0]?.n).toBe(0)
  }

  test('a delete mid-reply stops the turn first, then removes everything of it', async () => {
    const user = newUser()
    const running = await sendMessage(user, LONG_MESSAGE)
    await running.stream.until((frames) => frames.some(isAppend))
    // A second turn queued behind the running one.
    const queued = await sendMessage(user, 'and then this', running.cid)
    expect((await get(t.app, '/backend-api/conversations', asUser(user))).status).toBe(200)

    const deleted = await patch(`/conversation/${running.cid}`, { is_visible: false }, user)
    expect(deleted.status).toBe(200)
    expect(await deleted.json()).toStrictEqual({ success: true })

    // The running reply was cut short the way a stop cuts it.
    const frames = framesOf(await running.stream.rest())
    expectInterruptedEnding(frames)
    expect(frames.filter(isAppend).length).toBeLessThan(40)
    // The queued turn never ran: its stream ends without a single chunk.
    const queuedFrames = framesOf(await queued.stream.rest())
    expect(queuedFrames.filter(isAppend)).toEqual([])
    expect(queuedFrames.at(-1)?.data).toBe('[DONE]')

    await t.conversations.whenIdle()
    await expectGone(user, running.cid, [running, queued])
  })

  test('a delete through another instance stops the turn where it runs', async () => {
    // A second instance: same database, cache and turn state, its own runner.
    const other = await conversationApp({
      backend,
      cache: t.cache,
      model: slowLocalModel(),
    })
    const user = newUser()
    const running = await sendMessage(user, LONG_MESSAGE)
    await running.stream.until((frames) => frames.some(isAppend))

    const deleted = await other.app.handle(
      new Request(`http://localhost/backend-api/conversation/${running.cid}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', ...asUser(user) },
        body: JSON.stringify({ is_visible: false }),
      }),
    )
    expect(deleted.status).toBe(200)
    expectInterruptedEnding(framesOf(await running.stream.rest()))
    await t.conversations.whenIdle()
    await expectGone(user, running.cid, [running])
    await other.conversations.close()
  })

  test('deleting all conversations stops the turns running in them', async () => {
    const user = newUser()
    const other = newUser()
    const mine = await sendMessage(user, LONG_MESSAGE)
    const theirs = await sendMessage(other, 'not to be touched')
    await mine.stream.until((frames) => frames.some(isAppend))

    expect((await patch('/conversations', { is_visible: false }, user)).status).toBe(200)
    expectInterruptedEnding(framesOf(await mine.stream.rest()))
    await t.conversations.whenIdle()
    await expectGone(user, mine.cid, [mine])

    // Another user's turn ran to its normal end and stays.
    const theirFrames = framesOf(await theirs.stream.rest())
    expect(theirFrames.map((f) => f.data).join('\n')).toContain('"finish_details":{"type":"stop"}')
    expect(
      (await get(t.app, `/backend-api/conversation/${theirs.cid}`, asUser(other))).status,
    ).toBe(200)
  })
})
