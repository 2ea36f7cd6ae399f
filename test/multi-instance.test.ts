// Two (and three) real server processes on one Postgres and one Redis, no
// sticky routing (CONTRACT §12-§13): a stream resumes on the other instance
// exactly once; concurrent sends split across both run one at a time in the
// order they were accepted, each answering the previous reply; a stop reaches
// the instance running the turn; a cache flush mid-turn changes nothing
// visible; and when the owner of a turn is killed (SIGKILL) mid-reply, another
// instance finishes it as interrupted, keeping the text streamed, and then
// runs the send queued behind it; killed after storing a first turn's reply
// but before ending its stream (while the model writes its title), another
// instance ends the stream as stored. Needs TEST_DATABASE_URL and TEST_REDIS_URL.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { titleFrom } from '../src/conversation/messages.ts'
import { localReply } from '../src/conversation/model/local.ts'
import type { Db } from '../src/storage/db.ts'
import { migrate } from '../src/storage/migrate.ts'
import { createPostgresDb } from '../src/storage/postgres.ts'
import { createRedisCache } from '../src/storage/redis-cache.ts'
import { TEST_DATABASE_URL, TEST_REDIS_URL, uniqueName } from './support/backends.ts'
import {
  appendedChunks,
  dataItems,
  killAllServers,
  reading,
  type Server,
  send,
  startServer,
  waitReady,
} from './support/server-process.ts'
import { completeFrames, frameData } from './support/sse-frames.ts'

const skipReason =
  TEST_DATABASE_URL && TEST_REDIS_URL ? undefined : 'set TEST_DATABASE_URL and TEST_REDIS_URL'
if (skipReason) console.log(`multi-instance.test.ts skipped: ${skipReason}`)

/** Redis databases no other test uses: the cache, and the state one up. */
const CACHE_DB = 14
const LEASE_MS = 2_000
const LONG =
  'please answer at some length so that the reply takes a while to stream, word after word, ' +
  'long enough for another instance to step in while it is still running'
const INTERRUPTED_COMPLETION =
  '{"p":"/message/status","o":"replace","v":"finished_partial_completion"}'

describe.skipIf(skipReason !== undefined)('two instances on one Postgres and Redis', () => {
  let schema: string
  let admin: Db
  let db: Db
  let env: Record<string, string>
  let a: Server
  let b: Server

  const redisUrl = (database: number) => {
    const url = new URL(TEST_REDIS_URL as string)
    url.pathname = `/${database}`
    return url.toString()
  }
  const flushRedis = async () => {
    for (const database of [CACHE_DB, CACHE_DB + 1]) {
      const cache = createRedisCache(redisUrl(database))
      await cache.flush()
      await cache.close()
    }
  }

  beforeAll(async () => {
    const url = TEST_DATABASE_URL as string
    schema = uniqueName('multi')
    admin = createPostgresDb(url, { max: 1 })
    await admin.exec(`CREATE SCHEMA ${schema}`)
    db = createPostgresDb(url, { schema, max: 2 })
    await migrate(db)
    await flushRedis()
    const databaseUrl = new URL(url)
    databaseUrl.searchParams.set('search_path', `${schema},public`)
    // No RESUME_TOKEN_SECRET: the instances share one through the state store.
    env = {
      DATABASE_URL: databaseUrl.toString(),
      REDIS_URL: redisUrl(CACHE_DB),
      LOCAL_MODEL_CHUNK_DELAY_MS: '30',
      TURN_LEASE_MS: String(LEASE_MS),
    }
    a = startServer(env)
    b = startServer(env)
    await Promise.all([waitReady(a), waitReady(b)])
  }, 60_000)

  afterAll(async () => {
    await killAllServers()
    await db.close()
    await admin.exec(`DROP SCHEMA ${schema} CASCADE`)
    await admin.close()
    await flushRedis()
  }, 30_000)

  const user = () => uniqueName('user')
  const headers = (userId: string) => ({ 'content-type': 'application/json', 'x-user-id': userId })

  function resume(server: Server, token: string, conversationId: string, offset: number) {
    return fetch(`${server.base}/backend-api/f/conversation/resume`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-conduit-token': token },
      body: JSON.stringify({ conversation_id: conversationId, offset }),
    })
  }

  async function history(server: Server, userId: string, conversationId: string) {
    const response = await fetch(`${server.base}/backend-api/conversation/${conversationId}`, {
      headers: headers(userId),
    })
    expect(response.status).toBe(200)
    return (await response.json()) as {
      messages: { id: string; role: string; content: { parts: string[] } }[]
    }
  }

  /** Starts a send and reads until `appends` append items arrived: the frames so far. */
  async function sendAndReadSome(server: Server, userId: string, appends: number, extra = {}) {
    const stream = reading(await send(server.base, userId, LONG, extra))
    await stream.until((text) => appendedChunks(completeFrames(text).join('')).length >= appends)
    const frames = completeFrames(stream.text())
    const token = frameData<{ token: string; conversation_id: string }>(frames[1])
    return { stream, frames, token: token.token, conversationId: token.conversation_id }
  }

  test('a stream resumes on the other instance exactly once, live and after it ends', async () => {
    const userId = user()
    const started = await sendAndReadSome(a, userId, 3)
    await started.stream.cancel()
    const offset = started.frames.length
    const rest = await (await resume(b, started.token, started.conversationId, offset)).text()
    expect(rest).toEndWith('data: [DONE]\n\n')
    const whole = await (await resume(b, started.token, started.conversationId, 0)).text()
    expect(started.frames.join('') + completeFrames(rest).join('')).toBe(
      completeFrames(whole).join(''),
    )
    const { messages } = await history(a, userId, started.conversationId)
    expect(messages[1]?.content.parts[0]).toBe(appendedChunks(whole).join(''))
  }, 60_000)

  test('concurrent sends split across both run one at a time, in order, each answering the previous reply', async () => {
    const userId = user()
    const first = await (await send(a.base, userId, 'start')).text()
    const conversationId = dataItems(first)[1]?.conversation_id as string
    const bodies = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const server = i % 2 ? b : a
        const response = await send(server.base, userId, `message ${i}`, {
          conversation_id: conversationId,
          messages: [
            {
              id: `c-${i}`,
              role: 'user',
              content: { content_type: 'text', parts: [`message ${i}`] },
            },
          ],
        })
        expect(response.status).toBe(200)
        return response.text()
      }),
    )
    for (const body of bodies) expect(body).toEndWith('data: [DONE]\n\n')
    const { messages } = await history(b, userId, conversationId)
    expect(messages.map((m) => m.role)).toEqual(
      Array.from({ length: 14 }, (_, i) => (i % 2 ? 'assistant' : 'user')),
    )
    expect(new Set(messages.filter((m) => m.role === 'user').map((m) => m.id)).size).toBe(7)
    // Each reply answers its own message, with every earlier message (replies included) in its context.
    const context: { role: 'user' | 'assistant'; content: string }[] = []
    for (let i = 0; i < 14; i += 2) {
      const question = messages[i]?.content.parts.join('\n') ?? ''
      context.push({ role: 'user', content: question })
      const reply = messages[i + 1]?.content.parts[0] ?? ''
      expect(reply).toBe(localReply(context))
      context.push({ role: 'assistant', content: reply })
    }
    // Every stream carried exactly its stored reply.
    for (const body of bodies) {
      const replyId = (
        dataItems(body).find((item) => item.o === 'add') as {
          v: { message: { id: string } }
        }
      ).v.message.id
      const stored = messages.find((m) => m.id === replyId)
      expect(stored?.content.parts[0]).toBe(appendedChunks(body).join(''))
    }
  }, 60_000)

  test('a stop sent to the other instance ends the turn within 2 s, stored as streamed', async () => {
    const userId = user()
    const started = await sendAndReadSome(a, userId, 2)
    const asked = Date.now()
    const response = await fetch(`${b.base}/backend-api/stop_conversation`, {
      method: 'POST',
      headers: headers(userId),
      body: JSON.stringify({ conversation_id: started.conversationId }),
    })
    expect(response.status).toBe(200)
    const answer = (await response.json()) as { stopped: boolean; message_id: string }
    expect(answer.stopped).toBe(true)
    const body = await started.stream.until(() => false)
    expect(Date.now() - asked).toBeLessThan(2_000)
    expect(body).toEndWith('data: [DONE]\n\n')
    expect(body).toContain('"finish_details":{"type":"interrupted"}')
    expect(body).not.toContain('"type":"error"')
    const chunks = appendedChunks(body)
    expect(chunks.join('').length).toBeLessThan(
      localReply([{ role: 'user', content: LONG }]).length,
    )
    const { messages } = await history(b, userId, started.conversationId)
    expect(messages[1]?.id).toBe(answer.message_id)
    expect(messages[1]?.content.parts[0]).toBe(chunks.join(''))
  }, 60_000)

  test('a cache flush mid-turn changes nothing visible', async () => {
    const userId = user()
    const started = await sendAndReadSome(a, userId, 2)
    const flushed = await fetch(`${b.base}/cache`, { method: 'DELETE' })
    expect(flushed.status).toBe(200)
    const body = await started.stream.until(() => false)
    expect(body).toEndWith('data: [DONE]\n\n')
    expect(body).toContain('"finish_details":{"type":"stop"}')
    // The turn log is state, not cache: still resumable from the start.
    const whole = await (await resume(b, started.token, started.conversationId, 0)).text()
    expect(whole).toBe(completeFrames(body).join(''))
    const next = await (
      await send(b.base, userId, 'and then?', { conversation_id: started.conversationId })
    ).text()
    const { messages } = await history(a, userId, started.conversationId)
    const context = [
      { role: 'user' as const, content: LONG },
      { role: 'assistant' as const, content: appendedChunks(body).join('') },
      { role: 'user' as const, content: 'and then?' },
    ]
    expect(messages[1]?.content.parts[0]).toBe(context[1]?.content ?? '')
    expect(appendedChunks(next).join('')).toBe(localReply(context))
  }, 60_000)

  test('kill -9 of the owner mid-turn: another instance finishes it as interrupted, then runs the queued send', async () => {
    const c = startServer(env)
    await waitReady(c)
    const userId = user()
    const started = await sendAndReadSome(c, userId, 3)
    c.proc.kill('SIGKILL')
    await c.proc.exited
    const killedAt = Date.now()
    // A send queued behind the dead owner's turn, through a live instance.
    const queued = send(b.base, userId, 'are you still there?', {
      conversation_id: started.conversationId,
    }).then((response) => response.text())
    const rest = await (
      await resume(a, started.token, started.conversationId, started.frames.length)
    ).text()
    expect(Date.now() - killedAt).toBeLessThan(30_000)
    const body = started.frames.join('') + rest
    const items = dataItems(body)
    const error = items.find((item) => item.type === 'error')
    expect(error).toMatchObject({
      type: 'error',
      conversation_id: started.conversationId,
      code: 'interrupted',
    })
    expect(rest).toContain(INTERRUPTED_COMPLETION)
    expect(rest).toContain('"type":"message_stream_complete"')
    expect(rest).toEndWith('data: [DONE]\n\n')
    const partial = appendedChunks(body).join('')
    expect(partial.length).toBeGreaterThan(0)

    const next = await queued
    expect(next).toEndWith('data: [DONE]\n\n')
    expect(next).toContain('"finish_details":{"type":"stop"}')
    const { messages } = await history(a, userId, started.conversationId)
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant'])
    expect(messages[1]?.content.parts[0]).toBe(partial)
    const rows = await db.query<{ status: string }>('SELECT status FROM messages WHERE id = $1', [
      messages[1]?.id,
    ])
    expect(rows[0]?.status).toBe('finished_partial_completion')
    // The queued send's context held the partial reply.
    expect(messages[3]?.content.parts[0]).toBe(
      localReply([
        { role: 'user', content: LONG },
        { role: 'assistant', content: partial },
        { role: 'user', content: 'are you still there?' },
      ]),
    )
  }, 90_000)
  test('kill -9 after the reply is stored, before its stream ends: another instance ends it as stored', async () => {
    // An OpenAI-compatible model server: replies stream at once, title requests never answer.
    let titleAsked: () => void = () => {}
    const asked = new Promise<void>((resolve) => {
      titleAsked = resolve
    })
    const chunk = (content: string) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content } }] })}\n\n`
    const model = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(request) {
        const body = (await request.json()) as { stream?: boolean }
        if (!body.stream) {
          titleAsked()
          return new Promise<Response>(() => {})
        }
        const reply = `${['Stored ', 'before ', 'the ', 'crash.'].map(chunk).join('')}data: [DONE]\n\n`
        return new Response(reply, { headers: { 'content-type': 'text/event-stream' } })
      },
    })
    try {
      const c = startServer({
        ...env,
        MODEL_PROVIDER: 'openai',
        MODEL: 'fake-model',
        OPENAI_BASE_URL: `http://127.0.0.1:${model.port}`,
      })
      await waitReady(c)
      const userId = user()
      const message = 'name this conversation after the crash'
      const stream = reading(await send(c.base, userId, message))
      // The title is asked for after the reply is stored and before the stream ends.
      await asked
      await stream.until(
        (text) =>
          appendedChunks(completeFrames(text).join('')).join('') === 'Stored before the crash.',
      )
      c.proc.kill('SIGKILL')
      await c.proc.exited
      const killedAt = Date.now()
      const frames = completeFrames(stream.text())
      const { token, conversation_id: conversationId } = frameData<{
        token: string
        conversation_id: string
      }>(frames[1])
      expect(frames.join('')).not.toContain('message_stream_complete')
      const rest = await (await resume(a, token, conversationId, frames.length)).text()
      expect(Date.now() - killedAt).toBeLessThan(30_000)
      const items = dataItems(rest)
      expect(items.find((item) => item.type === 'error')).toBeUndefined()
      expect(rest).toContain('"finish_details":{"type":"stop"}')
      expect(items).toContainEqual({
        type: 'title_generation',
        title: titleFrom(message),
        conversation_id: conversationId,
      })
      expect(rest).toContain('"type":"message_stream_complete"')
      expect(rest).toEndWith('data: [DONE]\n\n')
      expect(appendedChunks(frames.join('') + rest).join('')).toBe('Stored before the crash.')
      const { messages } = await history(b, userId, conversationId)
      expect(messages.map((m) => m.content.parts[0])).toEqual([message, 'Stored before the crash.'])
      const rows = await db.query<{ status: string }>('SELECT status FROM messages WHERE id = $1', [
        messages[1]?.id,
      ])
      expect(rows[0]?.status).toBe('finished_successfully')
      // Resumed again, from the start, on the other instance: the same bytes, once.
      const again = await (await resume(b, token, conversationId, 0)).text()
      expect(again).toBe(frames.join('') + rest)
    } finally {
      model.stop(true)
    }
  }, 90_000)
})
