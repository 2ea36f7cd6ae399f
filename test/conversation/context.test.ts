// The context list's bookkeeping (context.ts), over every cache adapter: a
// turn starting a new tree takes its inputs without reading anything; a
// stored reply joins a list that exists, and a list that is gone stays gone,
// even when it goes while the reply is being recorded.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { StoredMessage } from '../../src/conversation/messages.ts'
import { CONTEXT_LENGTH, contextKey } from '../../src/conversation/reads/cache-keys.ts'
import { contextForTurn, recordReply } from '../../src/conversation/reads/context.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db } from '../../src/storage/db.ts'
import { cacheBackends } from '../support/backends.ts'

/** recordReply needs no database: one that fails the test if it is asked anything. */
const noDatabase = new Proxy({} as Db, {
  get(_target, name) {
    throw new Error(`recordReply used the database (${String(name)})`)
  },
})

const reply = (id: string): StoredMessage => ({
  id,
  role: 'assistant',
  content: { content_type: 'text', parts: [`reply ${id}`] },
  createTime: 1_700_000_000,
})

const idsIn = async (cache: Cache, key: string) =>
  (await cache.listAll(key)).map((entry) => (JSON.parse(entry) as { id: string }).id)

for (const backend of cacheBackends())
  describe(`recordReply: ${backend.name}`, () => {
    let cache: Cache
    const warnings: unknown[] = []
    const deps = () => ({
      db: noDatabase,
      cache,
      warn: (_: string, e: unknown) => warnings.push(e),
    })
    beforeAll(async () => {
      cache = await backend.open()
    })
    afterAll(async () => {
      expect(warnings).toEqual([])
      await cache.close()
    })

    test('appends the reply to a list that exists, keeping the last CONTEXT_LENGTH', async () => {
      const conversationId = crypto.randomUUID()
      const key = contextKey(conversationId)
      const earlier = Array.from({ length: CONTEXT_LENGTH }, (_, index) =>
        JSON.stringify({ id: `m${index}`, role: 'user', content: {}, create_time: 1 }),
      )
      await cache.listReplace(key, earlier, 600)
      await recordReply(deps(), conversationId, reply('r1'))
      const ids = await idsIn(cache, key)
      expect(ids).toHaveLength(CONTEXT_LENGTH)
      expect(ids.at(-1)).toBe('r1')
      expect(ids[0]).toBe('m1')
    })

    test('a list that is absent stays absent', async () => {
      const conversationId = crypto.randomUUID()
      await recordReply(deps(), conversationId, reply('r1'))
      expect(await cache.listAll(contextKey(conversationId))).toEqual([])
    })

    test('a list dropped while the reply is recorded does not come back as the reply alone', async () => {
      const conversationId = crypto.randomUUID()
      const key = contextKey(conversationId)
      await cache.listReplace(key, [JSON.stringify({ id: 'm0', role: 'user' })], 600)
      // Whatever recordReply reads of the list, the list is dropped right after
      // (a stop's forgetContext, a flush) and before anything it writes.
      const racing: Cache = {
        ...cache,
        kind: cache.kind,
        async listAll(listKey) {
          const values = await cache.listAll(listKey)
          await cache.del(listKey)
          return values
        },
        listPushIfPresent: async (...args) => {
          await cache.del(key)
          return cache.listPushIfPresent(...args)
        },
      }
      await recordReply({ ...deps(), cache: racing }, conversationId, reply('r1'))
      expect(await cache.listAll(key)).toEqual([])
    })

    test('a turn starting a new tree takes its inputs as the list, reading neither the list nor the database', async () => {
      const conversationId = crypto.randomUUID()
      const key = contextKey(conversationId)
      await cache.listReplace(key, [JSON.stringify({ id: 'stale', role: 'user' })], 600)
      const unread: Cache = {
        ...cache,
        kind: cache.kind,
        listAll: async () => {
          throw new Error('the list was read')
        },
      }
      const first: StoredMessage = {
        id: 'u1',
        role: 'user',
        content: { content_type: 'text', parts: ['hello'] },
        createTime: 1_700_000_000,
        parentId: null,
      }
      const context = await contextForTurn({ ...deps(), cache: unread }, conversationId, 'u1', [
        first,
      ])
      expect(context.map((message) => message.id)).toEqual(['u1'])
      expect(await idsIn(cache, key)).toEqual(['u1'])
    })
  })
