// A retried send never runs twice (CONTRACT §14), over real ports: a client
// re-POSTing a send (same user, same first message id, same messages) gets the
// original turn's stream from item 0, byte for byte - live while it runs,
// replayed to [DONE] after - and nothing new is stored or generated, with or
// without conversation_id, on the instance that ran it or another. Same id
// with other messages is 409 and stores nothing. Two identical sends at once
// make one conversation and one generation. Another user's message id finds
// nothing of theirs. Embedded: one server process on PGlite and in-process
// state; real (TEST_DATABASE_URL and redis-server): two processes on one
// Postgres schema and a private Redis. The end of a stream's retention and a
// variant are checked in process, over every app backend.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Db } from '../../src/storage/db.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { suiteApp } from '../support/backend-apps.ts'
import { appBackends, TEST_DATABASE_URL, uniqueName } from '../support/backends.ts'
import { framesOf, newUser, post, textMessage } from '../support/conversation-app.ts'
import { type PrivateRedis, REDIS_SERVER, startPrivateRedis } from '../support/redis-server.ts'
import {
  appendedChunks,
  killAllServers,
  reading,
  type Server,
  startReadyServer,
} from '../support/server-process.ts'
import { completeFrames, frameData } from '../support/sse-frames.ts'

const SEND = '/backend-api/f/conversation'
/** Long enough, at CHUNK_DELAY_MS a word, for a retry to arrive while the reply streams. */
const LONG =
  'please answer at some length so that the reply takes a while to stream, word after word, ' +
  'long enough for the same send to come again while it is still running'
const CHUNK_DELAY_MS = '40'

interface Deployment {
  name: string
  /** The servers sends go to: the second is another instance when there are two. */
  start(): Promise<[Server, Server]>
  stop(): Promise<void>
}

const embedded: Deployment = {
  name: 'embedded (one process, PGlite, in-process state)',
  async start() {
    const server = await startReadyServer({ LOCAL_MODEL_CHUNK_DELAY_MS: CHUNK_DELAY_MS })
    return [server, server]
  },
  stop: killAllServers,
}

/** Two processes on a fresh Postgres schema and a private redis-server. */
function realDeployment(databaseUrl: string): Deployment {
  let admin: Db | undefined
  let schema = ''
  let redis: PrivateRedis | undefined
  return {
    name: 'real (two processes, Postgres, Redis)',
    async start() {
      schema = uniqueName('retried')
      admin = createPostgresDb(databaseUrl, { max: 1 })
      await admin.exec(`CREATE SCHEMA ${schema}`)
      const db = createPostgresDb(databaseUrl, { schema, max: 1 })
      await migrate(db)
      await db.close()
      redis = await startPrivateRedis()
      const url = new URL(databaseUrl)
      url.searchParams.set('search_path', `${schema},public`)
      const env = {
        DATABASE_URL: url.toString(),
        REDIS_URL: redis.url,
        LOCAL_MODEL_CHUNK_DELAY_MS: CHUNK_DELAY_MS,
      }
      return Promise.all([startReadyServer(env), startReadyServer(env)])
    },
    async stop() {
      await killAllServers()
      await redis?.stop()
      await admin?.exec(`DROP SCHEMA ${schema} CASCADE`)
      await admin?.close()
    },
  }
}

const deployments = [embedded]
if (TEST_DATABASE_URL && REDIS_SERVER) deployments.push(realDeployment(TEST_DATABASE_URL))
else console.log('retried-send.test.ts: real deployment skipped (TEST_DATABASE_URL, redis-server)')

type Message = ReturnType<typeof textMessage>

function sendTo(server: Server, userId: string, messages: Message[], extra = {}) {
  return fetch(`${server.base}${SEND}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ user_id: userId, messages, ...extra }),
  })
}

/** The item frames of a whole stream (comments left out), checked to end with [DONE]. */
async function wholeStream(response: Response): Promise<string[]> {
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('text/event-stream')
  const frames = completeFrames(await response.text())
  expect(frames.at(-1)).toBe('data: [DONE]\n\n')
  return frames
}

const conversationOf = (frames: string[]) =>
  frameData<{ conversation_id: string }>(frames[1]).conversation_id

/** The reply's id: from the assistant message's add item. */
function replyOf(frames: string[]): string {
  for (const frame of frames) {
    if (!frame.includes('"o":"add"')) continue
    return frameData<{ v: { message: { id: string } } }>(frame).v.message.id
  }
  throw new Error('no assistant message in the stream')
}

const headers = (userId: string) => ({ 'x-user-id': userId })

async function readJson<T>(server: Server, path: string, userId: string): Promise<T> {
  const response = await fetch(`${server.base}${path}`, { headers: headers(userId) })
  expect(response.status).toBe(200)
  return (await response.json()) as T
}

/** The user's conversations, and every reply stored in them (whole trees). */
async function stored(server: Server, userId: string) {
  const list = await readJson<{ total: number; items: { id: string }[] }>(
    server,
    '/backend-api/conversations?limit=100',
    userId,
  )
  let replies = 0
  for (const { id } of list.items) {
    const detail = await readJson<{
      mapping: Record<string, { message: { author: { role: string } } | null }>
    }>(server, `/backend-api/conversation/${id}`, userId)
    replies += Object.values(detail.mapping).filter(
      (node) => node.message?.author.role === 'assistant',
    ).length
  }
  return { conversations: list.total, replies }
}

/** How many turns the servers started for the user (their `turn started` log lines). */
function turnsStarted(servers: readonly Server[], userId: string): number {
  let count = 0
  for (const server of new Set(servers))
    for (const line of server.stdout().split('\n')) {
      if (!line.includes('"turn started"')) continue
      const fields = JSON.parse(line) as { user_id?: string }
      if (fields.user_id === userId) count++
    }
  return count
}

async function expectConflict(response: Response, pattern: RegExp) {
  expect(response.status).toBe(409)
  const body = (await response.json()) as { code: string; detail: string }
  expect(body.code).toBe('conflict')
  expect(body.detail).toMatch(pattern)
  return body
}

for (const deployment of deployments)
  describe(`a retried send, ${deployment.name}`, () => {
    let a: Server
    let b: Server
    beforeAll(async () => {
      ;[a, b] = await deployment.start()
    }, 60_000)
    afterAll(() => deployment.stop(), 30_000)

    test('a first send retried while it runs gets its stream from item 0, live, and starts nothing', async () => {
      const user = newUser()
      const messages = [textMessage(LONG, crypto.randomUUID())]
      const original = reading(await sendTo(a, user, messages))
      await original.until((text) => appendedChunks(text).length >= 3)
      const retry = await sendTo(b, user, messages)
      expect(retry.status).toBe(200)
      const cid = conversationOf(completeFrames(original.text()))
      // The turn still ran when the retry was answered: the retry follows it live.
      const status = await readJson<{ streaming: boolean }>(
        b,
        `/backend-api/conversation/${cid}/stream_status`,
        user,
      )
      expect(status.streaming).toBe(true)
      const retried = await wholeStream(retry)
      await original.until((text) => text.includes('data: [DONE]'))
      // Byte for byte the same items, the resume token and create times included.
      expect(retried).toEqual(completeFrames(original.text()))
      expect(await stored(a, user)).toEqual({ conversations: 1, replies: 1 })
      expect(turnsStarted([a, b], user)).toBe(1)
    }, 60_000)

    test('retried after it ended, it replays the stream to [DONE], with or without conversation_id', async () => {
      const user = newUser()
      const messages = [textMessage('hello once', crypto.randomUUID())]
      const first = await wholeStream(await sendTo(a, user, messages))
      const cid = conversationOf(first)
      expect(await wholeStream(await sendTo(b, user, messages))).toEqual(first)
      expect(await wholeStream(await sendTo(a, user, messages, { conversation_id: cid }))).toEqual(
        first,
      )
      // A chatgpt.com client names the top of the tree on a first send; its retry does too.
      expect(
        await wholeStream(
          await sendTo(b, user, messages, { parent_message_id: 'client-created-root' }),
        ),
      ).toEqual(first)
      expect(await stored(b, user)).toEqual({ conversations: 1, replies: 1 })
      expect(turnsStarted([a, b], user)).toBe(1)
    }, 60_000)

    test('a send retried inside an existing conversation gets that turn’s stream', async () => {
      const user = newUser()
      const first = await wholeStream(
        await sendTo(a, user, [textMessage('first question', crypto.randomUUID())]),
      )
      const cid = conversationOf(first)
      // Two messages in one send: the retry repeats both; the reply answers the last.
      const messages = [
        textMessage('second question', crypto.randomUUID()),
        textMessage('and a third', crypto.randomUUID()),
      ]
      const second = await wholeStream(await sendTo(b, user, messages, { conversation_id: cid }))
      expect(conversationOf(second)).toBe(cid)
      expect(await wholeStream(await sendTo(a, user, messages, { conversation_id: cid }))).toEqual(
        second,
      )
      // Its retry without conversation_id finds it too.
      expect(await wholeStream(await sendTo(b, user, messages))).toEqual(second)
      expect(await stored(a, user)).toEqual({ conversations: 1, replies: 2 })
      expect(turnsStarted([a, b], user)).toBe(2)
    }, 60_000)

    test('the same id with other messages is 409 and stores nothing', async () => {
      const user = newUser()
      const id = crypto.randomUUID()
      const first = await wholeStream(await sendTo(a, user, [textMessage('the original', id)]))
      const cid = conversationOf(first)
      const other = await wholeStream(
        await sendTo(a, user, [textMessage('another conversation', crypto.randomUUID())]),
      )
      const before = await stored(a, user)
      expect(before).toEqual({ conversations: 2, replies: 2 })
      const refusals = [
        await expectConflict(
          await sendTo(b, user, [textMessage('not the original', id)]),
          /already sent, with other messages/,
        ),
        await expectConflict(
          await sendTo(b, user, [textMessage('not the original', id)], { conversation_id: cid }),
          /already/,
        ),
        // The same messages plus one more are other messages too.
        await expectConflict(
          await sendTo(a, user, [textMessage('the original', id), textMessage('and more')]),
          /already sent, with other messages/,
        ),
        // The same send to another of the user's conversations is not a retry.
        await expectConflict(
          await sendTo(b, user, [textMessage('the original', id)], {
            conversation_id: conversationOf(other),
          }),
          /already sent, in another conversation/,
        ),
      ]
      // The refusals never echo the stored text.
      for (const refusal of refusals) expect(refusal.detail).not.toContain('the original')
      expect(await stored(b, user)).toEqual(before)
      expect(turnsStarted([a, b], user)).toBe(2)
    }, 60_000)

    test('two identical sends at once make one conversation and one generation', async () => {
      const user = newUser()
      for (let round = 0; round < 4; round++) {
        const messages = [textMessage(`at once, round ${round}`, crypto.randomUUID())]
        const [one, two] = await Promise.all([sendTo(a, user, messages), sendTo(b, user, messages)])
        const [first, second] = await Promise.all([wholeStream(one), wholeStream(two)])
        expect(second).toEqual(first)
      }
      expect(await stored(a, user)).toEqual({ conversations: 4, replies: 4 })
      // And inside an existing conversation.
      const existing = await wholeStream(
        await sendTo(a, user, [textMessage('start', crypto.randomUUID())]),
      )
      const cid = conversationOf(existing)
      const messages = [textMessage('both at once', crypto.randomUUID())]
      const [one, two] = await Promise.all([
        sendTo(a, user, messages, { conversation_id: cid }),
        sendTo(b, user, messages, { conversation_id: cid }),
      ])
      expect(await wholeStream(two)).toEqual(await wholeStream(one))
      expect(await stored(b, user)).toEqual({ conversations: 5, replies: 6 })
      expect(turnsStarted([a, b], user)).toBe(6)
    }, 90_000)

    test('another user’s message id finds nothing of theirs', async () => {
      const owner = newUser()
      const id = crypto.randomUUID()
      const messages = [textMessage('private words', id)]
      const theirs = await wholeStream(await sendTo(a, owner, messages))
      const cid = conversationOf(theirs)
      const stranger = newUser()
      // Into the owner's conversation: as for any conversation not the caller's.
      const into = await sendTo(b, stranger, messages, { conversation_id: cid })
      expect(into.status).toBe(404)
      // Without one: the stranger's own send, in a conversation of their own.
      const own = await wholeStream(await sendTo(b, stranger, messages))
      const body = own.join('')
      expect(conversationOf(own)).not.toBe(cid)
      expect(body).not.toContain(cid)
      expect(body).not.toContain(replyOf(theirs))
      expect(await stored(a, owner)).toEqual({ conversations: 1, replies: 1 })
      expect(await stored(a, stranger)).toEqual({ conversations: 1, replies: 1 })
      // Hostile-looking ids are ids like any other: stored, and their retries found.
      const odd = [textMessage('odd id', `x' OR '1'='1; --${crypto.randomUUID()}`)]
      const oddFirst = await wholeStream(await sendTo(a, stranger, odd))
      expect(await wholeStream(await sendTo(b, stranger, odd))).toEqual(oddFirst)
      const tooLong = await sendTo(a, stranger, [textMessage('long id', 'x'.repeat(129))])
      expect(tooLong.status).toBe(422)
      expect(await stored(a, stranger)).toEqual({ conversations: 2, replies: 2 })
    }, 60_000)
  })

describe.each(appBackends())('a retried send in process, $name', (backend) => {
  const t = suiteApp({ backend })

  async function sendAndRead(body: Record<string, unknown>) {
    const response = await post(t.app, SEND, body)
    expect(response.status).toBe(200)
    return framesOf(await response.text())
  }

  test('once its stream is no longer kept, a retry is 409 and starts nothing', async () => {
    const user = newUser()
    const id = crypto.randomUUID()
    const body = { user_id: user, messages: [textMessage('kept a while', id)] }
    const frames = await sendAndRead(body)
    const cid = frameData<{ conversation_id: string }>(frames[1]?.raw).conversation_id
    const reply = frames.find((frame) => frame.data.includes('"o":"add"'))
    const replyId = (JSON.parse(reply?.data ?? '{}') as { v: { message: { id: string } } }).v
      .message.id
    await t.conversations.whenIdle()
    // What the retention period ending does to the stream.
    await t.state.logs.remove(replyId)
    const response = await post(t.app, SEND, body)
    expect(response.status).toBe(409)
    expect(((await response.json()) as { detail: string }).detail).toContain(cid)
    const rows = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM messages WHERE conversation_id = $1`,
      [cid],
    )
    expect(rows[0]?.n).toBe(2)
    const conversations = await t.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM conversations WHERE user_id = $1',
      [user],
    )
    expect(conversations[0]?.n).toBe(1)
  })

  test('a variant naming a sent message regenerates: it is never taken for a retry', async () => {
    const user = newUser()
    const id = crypto.randomUUID()
    const frames = await sendAndRead({ user_id: user, messages: [textMessage('again', id)] })
    const cid = frameData<{ conversation_id: string }>(frames[1]?.raw).conversation_id
    const variant = {
      user_id: user,
      conversation_id: cid,
      action: 'variant',
      messages: [textMessage('again', id)],
    }
    await sendAndRead(variant)
    await sendAndRead(variant)
    await t.conversations.whenIdle()
    const rows = await t.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM messages WHERE conversation_id = $1 AND role = 'assistant'`,
      [cid],
    )
    expect(rows[0]?.n).toBe(3)
  })

  test('deleting a conversation takes its send keys along', async () => {
    const user = newUser()
    const id = crypto.randomUUID()
    const frames = await sendAndRead({ user_id: user, messages: [textMessage('gone soon', id)] })
    const cid = frameData<{ conversation_id: string }>(frames[1]?.raw).conversation_id
    await t.conversations.whenIdle()
    const keys = () =>
      t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM send_keys WHERE user_id = $1', [
        user,
      ])
    expect((await keys())[0]?.n).toBe(1)
    const response = await t.app.handle(
      new Request(`http://localhost/backend-api/conversation/${cid}`, {
        method: 'PATCH',
        headers: { 'content-type': 'application/json', 'x-user-id': user },
        body: JSON.stringify({ is_visible: false }),
      }),
    )
    expect(response.status).toBe(200)
    expect((await keys())[0]?.n).toBe(0)
  })
})
