// The multi-instance scenarios (CONTRACT §12-§13, §18), run over any Redis
// deployment: real server processes on one Postgres and one Redis, no sticky
// routing. A stream resumes on the other instance exactly once; concurrent
// sends split across both run one at a time in the order they were accepted,
// each answering the previous reply; a stop reaches the instance running the
// turn; a cache flush mid-turn changes nothing visible; and when the owner of
// a turn is killed (SIGKILL) mid-reply, another instance finishes it as
// interrupted, keeping the text streamed, and then runs the send queued
// behind it; killed after storing a first turn's reply but before ending its
// stream (while the ending waits for the model's title), another instance ends
// the stream as stored. multi-instance.test.ts runs them all on one Redis server,
// redis-deployments.test.ts the essentials on a Cluster.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { titleFrom } from '../../src/conversation/messages.ts'
import { localReply } from '../../src/conversation/model/local.ts'
import type { Db } from '../../src/storage/db.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { TEST_DATABASE_URL, uniqueName } from './backends.ts'
import {
  appendedChunks,
  dataItems,
  killAllServers,
  reading,
  type Server,
  send,
  startReadyServer,
} from './server-process.ts'
import { completeFrames, frameData } from './sse-frames.ts'

/** A Redis deployment the servers run on. */
export interface RedisUnderTest {
  name: string
  /** Why it cannot run here; undefined when it can. */
  missing: string | undefined
  /** Starts it if it is private; resolves with the servers' Redis variables. */
  start(): Promise<Record<string, string>>
  /** Removes what the servers stored (a shared Redis) or stops it (a private one). */
  stop(): Promise<void>
}

export type Scenario = 'resume' | 'order' | 'stop' | 'flush' | 'kill' | 'kill-after-store'

export const LONG =
  'please answer at some length so that the reply takes a while to stream, word after word, ' +
  'long enough for another instance to step in while it is still running'
const LEASE_MS = 2_000
const INTERRUPTED_COMPLETION =
  '{"p":"/message/status","o":"replace","v":"finished_partial_completion"}'

/** What the scenarios use, for more of them (`more`). */
export interface Instances {
  a: Server
  b: Server
  db: Db
  /** The environment a and b run with (a new server with it joins them). */
  env: Record<string, string>
  user(): string
  headers(userId: string): Record<string, string>
  resume(server: Server, token: string, conversationId: string, offset: number): Promise<Response>
  history(
    server: Server,
    userId: string,
    conversationId: string,
  ): Promise<{ messages: { id: string; role: string; content: { parts: string[] } }[] }>
  sendAndReadSome(
    server: Server,
    userId: string,
    appends: number,
    extra?: Record<string, unknown>,
  ): Promise<{
    stream: ReturnType<typeof reading>
    frames: string[]
    token: string
    conversationId: string
  }>
}

/**
 * Two instances (a, b) on a fresh Postgres schema and `redis`, running the
 * scenarios asked for (all by default), then the tests `more` adds. Skips
 * with the reason when Postgres or the deployment is missing.
 */
export function describeInstances(
  redis: RedisUnderTest,
  options: { scenarios?: readonly Scenario[]; more?: (instances: () => Instances) => void } = {},
) {
  const skipReason = !TEST_DATABASE_URL ? 'set TEST_DATABASE_URL' : redis.missing
  if (skipReason) console.log(`multi-instance on ${redis.name} skipped: ${skipReason}`)
  const wanted = new Set(
    options.scenarios ?? ['resume', 'order', 'stop', 'flush', 'kill', 'kill-after-store'],
  )
  const scenario = (name: Scenario, title: string, run: () => Promise<void>, timeout: number) => {
    if (wanted.has(name)) test(title, run, timeout)
  }

  describe.skipIf(skipReason !== undefined)(`instances on one Postgres and ${redis.name}`, () => {
    let schema: string
    let admin: Db
    let db: Db
    let env: Record<string, string>
    let a: Server
    let b: Server

    beforeAll(async () => {
      const url = TEST_DATABASE_URL as string
      schema = uniqueName('multi')
      admin = createPostgresDb(url, { max: 1 })
      await admin.exec(`CREATE SCHEMA ${schema}`)
      db = createPostgresDb(url, { schema, max: 2 })
      await migrate(db)
      const redisEnv = await redis.start()
      const databaseUrl = new URL(url)
      databaseUrl.searchParams.set('search_path', `${schema},public`)
      // No RESUME_TOKEN_SECRET: the instances share one through the state store.
      env = {
        DATABASE_URL: databaseUrl.toString(),
        ...redisEnv,
        LOCAL_MODEL_CHUNK_DELAY_MS: '30',
        TURN_LEASE_MS: String(LEASE_MS),
      }
      ;[a, b] = await Promise.all([startReadyServer(env), startReadyServer(env)])
    }, 90_000)

    afterAll(async () => {
      await killAllServers()
      await db.close()
      await admin.exec(`DROP SCHEMA ${schema} CASCADE`)
      await admin.close()
      await redis.stop()
    }, 30_000)

    const user = () => uniqueName('user')
    const headers = (userId: string) => ({
      'content-type': 'application/json',
      'x-user-id': userId,
    })

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

    scenario(
      'resume',
      'a stream resumes on the other instance exactly once, live and after it ends',
      async () => {
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
      },
      60_000,
    )

    scenario(
      'order',
      'concurrent sends split across both run one at a time, in order, each answering the previous reply',
      async () => {
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
      },
      60_000,
    )

    scenario(
      'stop',
      'a stop sent to the other instance ends the turn within 2 s, stored as streamed',
      async () => {
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
      },
      60_000,
    )

    scenario(
      'flush',
      'a cache flush mid-turn changes nothing visible',
      async () => {
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
      },
      60_000,
    )

    scenario(
      'kill',
      'kill -9 of the owner mid-turn: another instance finishes it as interrupted, then runs the queued send',
      async () => {
        const c = await startReadyServer(env)
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
        const rows = await db.query<{ status: string }>(
          'SELECT status FROM messages WHERE id = $1',
          [messages[1]?.id],
        )
        expect(rows[0]?.status).toBe('finished_partial_completion')
        // The queued send's context held the partial reply.
        expect(messages[3]?.content.parts[0]).toBe(
          localReply([
            { role: 'user', content: LONG },
            { role: 'assistant', content: partial },
            { role: 'user', content: 'are you still there?' },
          ]),
        )
      },
      90_000,
    )
    scenario(
      'kill-after-store',
      'kill -9 after the reply is stored, before its stream ends: another instance ends it as stored',
      async () => {
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
          const c = await startReadyServer({
            ...env,
            MODEL_PROVIDER: 'openai',
            MODEL: 'fake-model',
            OPENAI_BASE_URL: `http://127.0.0.1:${model.port}`,
          })
          const userId = user()
          const message = 'name this conversation after the crash'
          const stream = reading(await send(c.base, userId, message))
          // The title is asked for as the turn starts (CONTRACT §23).
          await asked
          await stream.until(
            (text) =>
              appendedChunks(completeFrames(text).join('')).join('') === 'Stored before the crash.',
          )
          // Then the reply is stored, and its ending waits (up to 2 s) for the title that never
          // comes. The row is in another process: watched until it is stored.
          const cid = frameData<{ conversation_id: string }>(
            completeFrames(stream.text())[1],
          ).conversation_id
          for (const deadline = Date.now() + 10_000; ; await Bun.sleep(10)) {
            const rows = await db.query<{ status: string }>(
              "SELECT status FROM messages WHERE conversation_id = $1 AND role = 'assistant'",
              [cid],
            )
            if (rows[0]?.status === 'finished_successfully') break
            if (Date.now() > deadline) throw new Error('the reply was not stored')
          }
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
          expect(messages.map((m) => m.content.parts[0])).toEqual([
            message,
            'Stored before the crash.',
          ])
          const rows = await db.query<{ status: string }>(
            'SELECT status FROM messages WHERE id = $1',
            [messages[1]?.id],
          )
          expect(rows[0]?.status).toBe('finished_successfully')
          // Resumed again, from the start, on the other instance: the same bytes, once.
          const again = await (await resume(b, token, conversationId, 0)).text()
          expect(again).toBe(frames.join('') + rest)
        } finally {
          model.stop(true)
        }
      },
      90_000,
    )

    options.more?.(() => ({ a, b, db, env, user, headers, resume, history, sendAndReadSome }))
  })
}
