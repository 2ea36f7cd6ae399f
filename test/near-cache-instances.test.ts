// The near cache across two real server processes on one Postgres and one
// (private) Redis: reads through one instance, whose near cache holds the
// history and the list, never serve them stale once a send through the other
// instance has ended ([DONE] means the reply is stored and the keys dropped);
// a value set directly in Redis by another client is what reads serve within
// 2 s (as Redis pushes its invalidation); DELETE /cache on one instance empties the other's near cache.
// Needs TEST_DATABASE_URL and redis-server.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Redis from 'ioredis'
import { historyKey, listKey } from '../src/conversation/reads/cache-keys.ts'
import { encodeList, listOf } from '../src/conversation/reads/list-cache.ts'
import type { Db } from '../src/storage/db.ts'
import { cacheRedisKey, DEFAULT_CACHE_PREFIX } from '../src/storage/keyspace.ts'
import { migrate } from '../src/storage/migrate.ts'
import { createPostgresDb } from '../src/storage/postgres.ts'
import { TEST_DATABASE_URL, uniqueName } from './support/backends.ts'
import { until } from './support/redis-deployments.ts'
import { type PrivateRedis, REDIS_SERVER, startPrivateRedis } from './support/redis-server.ts'
import {
  appendedChunks,
  killAllServers,
  type Server,
  send,
  startReadyServer,
} from './support/server-process.ts'
import { completeFrames, frameData } from './support/sse-frames.ts'

const skipReason = !TEST_DATABASE_URL
  ? 'set TEST_DATABASE_URL'
  : !REDIS_SERVER
    ? 'redis-server is not installed'
    : undefined
if (skipReason) console.log(`near-cache-instances.test.ts skipped: ${skipReason}`)

interface History {
  conversation_id: string
  messages: { id: string; role: string; content: { parts: string[] } }[]
}
interface ListPage {
  items: { id: string; last_message: string }[]
  total: number
}

/** A cache key's name in Redis, under the service's default cache prefix. */
const inRedis = (key: string) => cacheRedisKey(DEFAULT_CACHE_PREFIX, key)

describe.skipIf(skipReason !== undefined)('near cache across two instances', () => {
  let schema: string
  let admin: Db
  let db: Db
  let redis: PrivateRedis
  let raw: Redis
  let a: Server
  let b: Server

  beforeAll(async () => {
    const url = TEST_DATABASE_URL as string
    schema = uniqueName('near')
    admin = createPostgresDb(url, { max: 1 })
    await admin.exec(`CREATE SCHEMA ${schema}`)
    db = createPostgresDb(url, { schema, max: 1 })
    await migrate(db)
    redis = await startPrivateRedis()
    raw = new Redis(redis.url)
    const databaseUrl = new URL(url)
    databaseUrl.searchParams.set('search_path', `${schema},public`)
    const env = { DATABASE_URL: databaseUrl.toString(), REDIS_URL: redis.url }
    ;[a, b] = await Promise.all([startReadyServer(env), startReadyServer(env)])
  }, 60_000)

  afterAll(async () => {
    await killAllServers()
    raw?.disconnect()
    await redis?.stop()
    await db?.close()
    await admin?.exec(`DROP SCHEMA ${schema} CASCADE`)
    await admin?.close()
  }, 30_000)

  const get = async <T>(server: Server, path: string, userId: string): Promise<T> => {
    const response = await fetch(`${server.base}${path}`, { headers: { 'x-user-id': userId } })
    expect(response.status).toBe(200)
    return (await response.json()) as T
  }
  const history = (server: Server, userId: string, id: string) =>
    get<History>(server, `/backend-api/conversation/${id}`, userId)
  const list = (server: Server, userId: string) =>
    get<ListPage>(server, '/backend-api/conversations', userId)

  /** One whole turn; resolves once [DONE] arrived, with the conversation id and the reply. */
  async function turn(server: Server, userId: string, text: string, conversationId?: string) {
    const extra = conversationId ? { conversation_id: conversationId } : {}
    const body = await (await send(server.base, userId, text, extra)).text()
    expect(body).toEndWith('data: [DONE]\n\n')
    const first = frameData<{ conversation_id: string }>(completeFrames(body)[1])
    return { conversationId: first.conversation_id, reply: appendedChunks(body).join('') }
  }

  test('reads through one instance are never stale once a send through the other has ended', async () => {
    const userId = uniqueName('user')
    let { conversationId, reply } = await turn(b, userId, 'turn 0')
    for (let round = 1; round <= 15; round++) {
      // a holds the current history and list in its near cache...
      const before = await history(a, userId, conversationId)
      expect(before.messages).toHaveLength(2 * round)
      expect(before.messages.at(-1)?.content.parts[0]).toBe(reply)
      expect((await list(a, userId)).items[0]?.last_message).toBe(reply)
      await history(a, userId, conversationId)
      // ...b runs the next turn...
      ;({ reply } = await turn(b, userId, `turn ${round}`, conversationId))
      // ...and a's very next reads show it.
      const after = await history(a, userId, conversationId)
      expect(after.messages).toHaveLength(2 * round + 2)
      expect(after.messages.at(-2)?.content.parts[0]).toBe(`turn ${round}`)
      expect(after.messages.at(-1)?.content.parts[0]).toBe(reply)
      expect((await list(a, userId)).items[0]?.last_message).toBe(reply)
    }
  }, 60_000)

  test('a new conversation made through one instance is listed at once by the other', async () => {
    const userId = uniqueName('user')
    await turn(a, userId, 'first')
    for (let count = 1; count <= 5; count++) {
      expect((await list(a, userId)).total).toBe(count)
      await list(a, userId)
      const { conversationId } = await turn(b, userId, `conversation ${count + 1}`)
      const page = await list(a, userId)
      expect(page.total).toBe(count + 1)
      expect(page.items[0]?.id).toBe(conversationId)
    }
  }, 60_000)

  test('a value set directly in Redis by another client is what reads serve within 2 s', async () => {
    const userId = uniqueName('user')
    const { conversationId } = await turn(a, userId, 'hello')
    expect((await history(a, userId, conversationId)).messages).toHaveLength(2)
    expect((await history(a, userId, conversationId)).messages).toHaveLength(2)
    // The cached form: the owner, then the body (reads.ts).
    const planted: History = { conversation_id: conversationId, messages: [] }
    await raw.set(
      inRedis(historyKey(conversationId)),
      `{"owner":${JSON.stringify(userId)},"body":${JSON.stringify(planted)}}`,
      'EX',
      600,
    )
    await until(
      async () => (await history(a, userId, conversationId)).messages.length === 0,
      'a reads the planted history',
      2_000,
    )
    expect(await history(a, userId, conversationId)).toEqual(planted)
    await raw.del(inRedis(historyKey(conversationId)))
    await until(
      async () => (await history(a, userId, conversationId)).messages.length === 2,
      'a reads the history again',
      2_000,
    )
  }, 30_000)

  test('DELETE /cache through one instance empties the near cache of the other', async () => {
    const userId = uniqueName('user')
    const { conversationId } = await turn(a, userId, 'hello')
    // a keeps a planted list near...
    await list(a, userId)
    const planted = encodeList(listOf([]))
    await raw.set(inRedis(listKey(userId)), planted, 'EX', 600)
    // Another client's write reaches a's near cache as Redis pushes its invalidation: soon, not at once.
    await until(async () => (await list(a, userId)).total === 0, 'a reads the planted list', 2_000)
    expect((await list(a, userId)).total).toBe(0)
    // ...until b flushes the cache: a then reads the database again.
    const flushed = await fetch(`${b.base}/cache`, { method: 'DELETE' })
    expect(flushed.status).toBe(200)
    const page = await list(a, userId)
    expect(page.total).toBe(1)
    expect(page.items[0]?.id).toBe(conversationId)
  }, 30_000)
})
