// The conversation API while its Redis cache is frozen, dead, or restored with
// old data (CONTRACT §4.7): sends and reads pay at most one short timeout and
// then run at database speed with the context from the database, the cache is
// used again within about a second of Redis answering, and no history, list
// or context older than the database is ever served. The database and turn
// state are embedded; only the cache is faulted (a TCP proxy to the test
// Redis, or a private redis-server). The rate limits are at their defaults.
// (The whole default deployment, cache and state on one Redis, as server
// processes: default-deployment.test.ts.)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createLocalModel } from '../../src/conversation/model/local.ts'
import type { ContextMessage, ModelProvider } from '../../src/conversation/model/provider.ts'
import { historyKey, listKey } from '../../src/conversation/reads/cache-keys.ts'
import { createRedisCache } from '../../src/storage/redis-cache.ts'
import type { ResilientCache } from '../../src/storage/resilient-cache.ts'
import { embeddedBackend, resilient, TEST_REDIS_URL, uniqueName } from '../support/backends.ts'
import {
  conversationApp,
  conversationIdOf,
  defaultRateLimits,
  get,
  newUser,
  sendAndRead,
  type TestApp,
  textMessage,
} from '../support/conversation-app.ts'
import { type FaultProxy, startFaultProxy, targetOf, throughProxy } from '../support/fault-proxy.ts'
import { type PrivateRedis, privateRedis, REDIS_SERVER } from '../support/redis-server.ts'
import { sleep } from '../support/server-process.ts'

/** The local model, remembering the context of every turn it answered. */
function recordingModel(): ModelProvider & { contexts: ContextMessage[][] } {
  const local = createLocalModel({ slug: 'local-echo', chunkDelayMs: 0 })
  const contexts: ContextMessage[][] = []
  return {
    slug: local.slug,
    contexts,
    stream(request) {
      contexts.push(request.messages)
      return local.stream(request)
    },
  }
}

async function eventually(check: () => boolean | Promise<boolean>, withinMs: number) {
  const deadline = Date.now() + withinMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms`)
    await sleep(10)
  }
}

/** A conversation driven over HTTP, with timings. */
function conversation(t: TestApp, user: string) {
  let id: string | undefined
  return {
    get id() {
      return id
    },
    async send(text: string) {
      const started = performance.now()
      const { response, frames } = await sendAndRead(t.app, {
        user_id: user,
        ...(id ? { conversation_id: id } : {}),
        messages: [textMessage(text)],
      })
      expect(response.status).toBe(200)
      expect(frames.at(-1)?.data).toBe('[DONE]')
      id ??= conversationIdOf(frames)
      return performance.now() - started
    },
    async detail() {
      const started = performance.now()
      const response = await get(t.app, `/backend-api/conversation/${id}`, { 'x-user-id': user })
      expect(response.status).toBe(200)
      const body = (await response.json()) as { messages: { content: { parts: string[] } }[] }
      return {
        texts: body.messages.map((m) => m.content.parts.join('')),
        ms: performance.now() - started,
      }
    },
    async list() {
      const started = performance.now()
      const response = await get(t.app, '/backend-api/conversations', { 'x-user-id': user })
      expect(response.status).toBe(200)
      const body = (await response.json()) as { items: { last_message: string }[] }
      return { lastMessage: body.items[0]?.last_message, ms: performance.now() - started }
    },
  }
}

/** User texts of a turn's context, in order. */
const userTexts = (context: ContextMessage[] | undefined) =>
  (context ?? []).filter((message) => message.role === 'user').map((message) => message.content)

if (TEST_REDIS_URL) {
  const redisUrl = TEST_REDIS_URL
  describe('Redis behind a fault proxy', () => {
    let proxy: FaultProxy
    let cache: ResilientCache
    let direct: ReturnType<typeof createRedisCache>
    let model: ReturnType<typeof recordingModel>
    let limits: Awaited<ReturnType<typeof defaultRateLimits>>
    let t: TestApp

    beforeAll(async () => {
      const prefix = `${uniqueName('outage')}:`
      proxy = await startFaultProxy(targetOf(redisUrl))
      cache = resilient(createRedisCache(throughProxy(redisUrl, proxy), { keyPrefix: prefix }))
      direct = createRedisCache(redisUrl, { keyPrefix: prefix })
      model = recordingModel()
      limits = await defaultRateLimits(embeddedBackend)
      t = await conversationApp({
        backend: embeddedBackend,
        cache,
        model,
        rateLimits: limits.limits,
      })
    })
    afterAll(async () => {
      await limits.close()
      await t.conversations.close()
      await cache.close()
      await direct.flush()
      await direct.close()
      await proxy.close()
    })

    for (const fault of ['freeze', 'drop'] as const)
      test(`${fault}: sends and reads at database speed, correct, and the cache is back within a second`, async () => {
        const user = newUser()
        const c = conversation(t, user)
        await c.send('first')
        expect((await c.detail()).texts).toHaveLength(2)
        await c.list()
        expect(await direct.get(historyKey(c.id ?? ''))).not.toBeNull()

        proxy[fault]()
        // The first send pays at most one cache timeout (500 ms), never one per cache call.
        expect(await c.send('second')).toBeLessThan(2_000)
        // From then on nothing waits for the cache.
        expect(await c.send('third')).toBeLessThan(1_000)
        const during = await c.detail()
        expect(during.ms).toBeLessThan(1_000)
        expect(during.texts).toHaveLength(6)
        expect(during.texts[4]).toBe('third')
        const list = await c.list()
        expect(list.ms).toBeLessThan(1_000)
        expect(list.lastMessage).toBe(during.texts[5])
        // The context came from the database: it holds every earlier turn.
        expect(userTexts(model.contexts.at(-1))).toEqual(['first', 'second', 'third'])

        proxy.pass()
        await eventually(() => cache.available, 1_500)
        // The cache was emptied: the detail cached before the outage (2 messages) is gone.
        expect(await direct.get(historyKey(c.id ?? ''))).toBeNull()
        expect((await c.detail()).texts).toEqual(during.texts)
        // The read fills the cache again (without making the reader wait for it).
        await eventually(async () => (await direct.get(historyKey(c.id ?? ''))) !== null, 1_000)
        await c.send('fourth')
        expect(userTexts(model.contexts.at(-1))).toEqual(['first', 'second', 'third', 'fourth'])
        expect(await direct.get(listKey(user))).toBeNull()
      }, 30_000)
  })
}

if (REDIS_SERVER) {
  describe('a private Redis killed and restored from an old snapshot', () => {
    let server: PrivateRedis
    let cache: ResilientCache
    let model: ReturnType<typeof recordingModel>
    let limits: Awaited<ReturnType<typeof defaultRateLimits>>
    let t: TestApp

    beforeAll(async () => {
      server = privateRedis()
      await server.start()
      cache = resilient(createRedisCache(server.url))
      model = recordingModel()
      limits = await defaultRateLimits(embeddedBackend)
      t = await conversationApp({
        backend: embeddedBackend,
        cache,
        model,
        rateLimits: limits.limits,
      })
    })
    afterAll(async () => {
      await limits.close()
      await t.conversations.close()
      await cache.close()
      await server.stop()
    })

    test('no history, list or context older than the database is served afterwards', async () => {
      const user = newUser()
      const c = conversation(t, user)
      await c.send('before the snapshot')
      const cached = await c.detail()
      expect(cached.texts).toHaveLength(2)
      await c.list()
      await server.save()

      await server.kill()
      expect(await c.send('during the outage')).toBeLessThan(2_000)
      const fresh = await c.detail()
      expect(fresh.texts).toHaveLength(4)

      // Back with the snapshot: a history of 2 messages, a context without the last turn.
      await server.start()
      expect(await server.admin.get(historyKey(c.id ?? ''))).toContain('before the snapshot')
      await eventually(() => cache.available, 1_500)

      expect((await c.detail()).texts).toEqual(fresh.texts)
      expect((await c.list()).lastMessage).toBe(fresh.texts[3])
      await c.send('after the restore')
      expect(userTexts(model.contexts.at(-1))).toEqual([
        'before the snapshot',
        'during the outage',
        'after the restore',
      ])
      expect((await c.detail()).texts).toHaveLength(6)
    }, 30_000)
  })
}
