// GET /backend-api/conversations and /conversation/{id}: shapes, paging and
// order, ownership, and cache-aside (CONTRACT §4.5-§4.7).
import { beforeAll, describe, expect, test } from 'bun:test'
import { historyKey, listKey } from '../../src/conversation/reads/cache-keys.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db, Row } from '../../src/storage/db.ts'
import { suiteApp } from '../support/backend-apps.ts'
import { appBackends } from '../support/backends.ts'
import {
  conversationIdOf,
  get,
  newUser,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'

/** The real test database, counting the queries sent to it. */
function countingDb(db: Db) {
  const counter = { queries: 0 }
  const counted: Db = {
    ...db,
    kind: db.kind,
    query: (text, params) => {
      counter.queries++
      return db.query(text, params)
    },
    transaction: (fn) => {
      counter.queries++
      return db.transaction(fn)
    },
  }
  return { db: counted, counter }
}

/** The real test cache, counting every operation sent to it. */
function countingCache(cache: Cache) {
  const counter = { operations: 0 }
  const counted = Object.fromEntries(
    Object.entries(cache).map(([name, value]) => [
      name,
      typeof value === 'function'
        ? (...args: unknown[]) => {
            counter.operations++
            return (value as (...a: unknown[]) => unknown).apply(cache, args)
          }
        : value,
    ]),
  ) as unknown as Cache
  return { cache: counted, counter }
}

/**
 * The real test database; once armed, the next query whose text includes
 * `marker` answers only when released (its rows read before, held back).
 */
function holdingDb(db: Db) {
  let armed: { marker: string; reached: () => void; release: Promise<void> } | undefined
  const holding: Db = {
    ...db,
    kind: db.kind,
    query: async <T extends Row = Row>(text: string, params?: readonly unknown[]) => {
      const rows = await db.query<T>(text, params)
      const hold = armed
      if (hold && text.includes(hold.marker)) {
        armed = undefined
        hold.reached()
        await hold.release
      }
      return rows
    },
  }
  /** Arms the hold: resolves `reached` when a query is held; call the returned release to let it go. */
  function arm(marker: string) {
    let reached = () => {}
    let release = () => {}
    const held = new Promise<void>((resolve) => {
      reached = resolve
    })
    armed = {
      marker,
      reached: () => reached(),
      release: new Promise<void>((resolve) => {
        release = resolve
      }),
    }
    return { held, release: () => release() }
  }
  return { db: holding, arm }
}

for (const backend of appBackends())
  describe(backend.name, () => {
    describe('a read that raced a write', () => {
      let holding: ReturnType<typeof holdingDb>
      const t = suiteApp(async () => {
        holding = holdingDb(await backend.db())
        return { backend, db: holding.db }
      })

      test('does not store what it read before the write after the write invalidated it', async () => {
        const user = newUser()
        const sent = await sendAndRead(t.app, { user_id: user, messages: [textMessage('one')] })
        const cid = conversationIdOf(sent.frames)
        await t.conversations.whenIdle()
        await t.cache.del(historyKey(cid))
        // The history read gets its rows, then waits while a send is stored.
        const hold = holding.arm('JOIN conversations c ON c.id = m.conversation_id')
        const racing = get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
        await hold.held
        await sendAndRead(t.app, {
          user_id: user,
          conversation_id: cid,
          messages: [textMessage('two')],
        })
        await t.conversations.whenIdle()
        hold.release()
        const raced = (await (await racing).json()) as { messages: unknown[] }
        expect(raced.messages).toHaveLength(2)
        // Its copy was refused: the next read is a miss that sees both turns.
        expect(await t.cache.get(historyKey(cid))).toBeNull()
        const next = (await (
          await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
        ).json()) as { messages: unknown[] }
        expect(next.messages).toHaveLength(4)
      })
    })

    let counter: { queries: number }
    let cacheCounter: { operations: number }
    const t = suiteApp(async () => {
      const counting = countingDb(await backend.db())
      const countingC = countingCache(backend.cache())
      counter = counting.counter
      cacheCounter = countingC.counter
      return { backend, db: counting.db, cache: countingC.cache }
    })

    // Each waits until the runner is idle: after [DONE] it still looks for a next turn,
    // and those queries must not count against the reads measured here.
    async function start(user: string, text: string) {
      const sent = await sendAndRead(t.app, { user_id: user, messages: [textMessage(text)] })
      await t.conversations.whenIdle()
      return conversationIdOf(sent.frames)
    }

    async function say(user: string, cid: string, text: string) {
      await sendAndRead(t.app, {
        user_id: user,
        conversation_id: cid,
        messages: [textMessage(text)],
      })
      await t.conversations.whenIdle()
    }

    interface ListBody {
      items: {
        id: string
        title: string
        last_message: string
        updated_at: string
        is_archived: boolean
        created_at: string
      }[]
      limit: number
      offset: number
      total: number
    }

    const list = async (user: string, query = '') => {
      const response = await get(t.app, `/backend-api/conversations${query}`, { 'x-user-id': user })
      return { response, body: (await response.json()) as ListBody }
    }

    describe('conversation list', () => {
      let user: string
      let ids: [string, string, string]
      beforeAll(async () => {
        user = newUser()
        ids = [
          await start(user, 'first topic'),
          await start(user, 'second topic'),
          await start(user, 'third topic'),
        ]
        await say(user, ids[0], 'back to the first') // now the most recently updated
      })

      test('defaults: newest update first, limit 20, offset 0, total', async () => {
        const { response, body } = await list(user)
        expect(response.status).toBe(200)
        expect(Object.keys(body)).toEqual(['items', 'limit', 'offset', 'total'])
        expect(body.limit).toBe(20)
        expect(body.offset).toBe(0)
        expect(body.total).toBe(3)
        expect(body.items.map((i) => i.id)).toEqual([ids[0], ids[2], ids[1]])
        const first = body.items[0]
        expect(Object.keys(first ?? {})).toEqual([
          'id',
          'title',
          'last_message',
          'updated_at',
          'is_archived',
          'created_at',
        ])
        expect(first?.title).toBe('first topic')
        expect(first?.is_archived).toBe(false)
        expect(first?.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        expect(first?.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        expect(first && first.created_at < first.updated_at).toBe(true)
        // The newest message of the first conversation is the assistant's reply.
        expect(first?.last_message).toContain('back to the first')
      })

      test('order=created is newest created first; paging slices it', async () => {
        expect((await list(user, '?order=created')).body.items.map((i) => i.id)).toEqual([
          ids[2],
          ids[1],
          ids[0],
        ])
        const page = (await list(user, '?order=created&offset=1&limit=1')).body
        expect(page.items.map((i) => i.id)).toEqual([ids[1]])
        expect(page).toMatchObject({ limit: 1, offset: 1, total: 3 })
        expect((await list(user, '?offset=5')).body.items).toEqual([])
      })

      test('every page and order is answered from one cached copy', async () => {
        await list(user)
        const before = counter.queries
        const cacheBefore = cacheCounter.operations
        const pages = await Promise.all(
          [
            '?order=created',
            '?limit=2',
            '?offset=1&order=updated',
            '?order=created&limit=1&offset=2',
          ].map((q) => list(user, q)),
        )
        expect(counter.queries).toBe(before)
        expect(cacheCounter.operations - cacheBefore).toBe(4) // one read per request
        expect(pages.map((p) => p.body.items.map((i) => i.id))).toEqual([
          [ids[2], ids[1], ids[0]],
          [ids[0], ids[2]],
          [ids[2], ids[1]],
          [ids[0]],
        ])
        expect(await t.cache.ttl(listKey(user))).toBeGreaterThan(590)
      })

      test('a title is at most 80 characters of the first message', async () => {
        const other = newUser()
        await start(other, `${'word '.repeat(40)}\nsecond line`)
        const title = (await list(other)).body.items[0]?.title ?? ''
        expect(Array.from(title).length).toBeLessThanOrEqual(80)
        expect(title.startsWith('word word')).toBe(true)
        expect(title).not.toContain('\n')
      })

      test('a new conversation and a new message invalidate the list', async () => {
        const other = newUser()
        const a = await start(other, 'one')
        expect((await list(other)).body.total).toBe(1)
        const b = await start(other, 'two')
        expect((await list(other)).body.items.map((i) => i.id)).toEqual([b, a])
        await say(other, a, 'again')
        expect((await list(other)).body.items.map((i) => i.id)).toEqual([a, b])
      })

      test('bad paging is 422 and a user sees only their own', async () => {
        for (const q of [
          '?limit=0',
          '?limit=101',
          '?offset=-1',
          '?offset=x',
          '?order=oldest',
          '?limit=1.5',
          '?is_archived=yes',
          '?is_archived=1',
          '?is_archived=',
          '?limit=28&is_archived=FALSE',
        ]) {
          const { response, body } = await list(user, q)
          expect(response.status).toBe(422)
          expect((body as unknown as { detail: string }).detail).toMatch(
            /"(limit|offset|order|is_archived)"/,
          )
        }
        expect((await list(newUser())).body).toEqual({ items: [], limit: 20, offset: 0, total: 0 })
      })

      test("unknown query parameters are ignored: the web sidebar's list call", async () => {
        const { response, body } = await list(
          user,
          '?offset=0&limit=28&order=updated&is_archived=false&is_starred=false&cursor=abc',
        )
        expect(response.status).toBe(200)
        expect(body.limit).toBe(28)
        expect(body.items.map((i) => i.id)).toEqual([ids[0], ids[2], ids[1]])
        expect((await list(user, '?is_archived=true')).body).toEqual({
          items: [],
          limit: 20,
          offset: 0,
          total: 0,
        })
      })

      test('no user is 401', async () => {
        const response = await get(t.app, '/backend-api/conversations')
        expect(response.status).toBe(401)
      })

      test('the user_id query parameter identifies the reader too', async () => {
        const response = await get(t.app, `/backend-api/conversations?user_id=${user}`)
        expect(((await response.json()) as ListBody).total).toBe(3)
      })
    })

    describe('conversation detail', () => {
      test('a hit is one cache read, no database query, the cached JSON as it is', async () => {
        const user = newUser()
        const cid = await start(user, 'cache me')
        const miss = await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
        const missText = await miss.text()
        expect(await t.cache.ttl(historyKey(cid))).toBeGreaterThan(590)
        const cached = (await t.cache.get(historyKey(cid))) ?? ''
        expect(cached).toContain(missText)
        expect(JSON.parse(cached)).toEqual({ owner: user, body: JSON.parse(missText) })
        const before = counter.queries
        const cacheBefore = cacheCounter.operations
        const hit = await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
        expect(cacheCounter.operations - cacheBefore).toBe(1)
        expect(hit.status).toBe(200)
        expect(hit.headers.get('content-type')).toContain('application/json')
        expect(await hit.text()).toBe(missText)
        expect(counter.queries).toBe(before)
      })

      test('ownership holds on a hit and on a miss: someone else gets 404', async () => {
        const user = newUser()
        const cid = await start(user, 'mine')
        await t.cache.del(historyKey(cid))
        const stranger = newUser()
        expect(
          (await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': stranger })).status,
        ).toBe(404)
        await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
        expect(await t.cache.get(historyKey(cid))).not.toBeNull()
        const before = counter.queries
        const onHit = await get(t.app, `/backend-api/conversation/${cid}`, {
          'x-user-id': stranger,
        })
        expect(onHit.status).toBe(404)
        expect(counter.queries).toBe(before)
      })

      test('a new message invalidates the history', async () => {
        const user = newUser()
        const cid = await start(user, 'one')
        await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
        await say(user, cid, 'two')
        const body = (await (
          await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
        ).json()) as {
          messages: unknown[]
        }
        expect(body.messages).toHaveLength(4)
      })

      test('flushing the cache loses nothing', async () => {
        const user = newUser()
        const cid = await start(user, 'keep me')
        const before = await (
          await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
        ).text()
        const listBefore = (await list(user)).body
        await t.cache.flush()
        expect(
          await (
            await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
          ).text(),
        ).toBe(before)
        expect((await list(user)).body).toEqual(listBefore)
      })

      test('not a UUID is 422, unknown is 404, no user is 401', async () => {
        const user = newUser()
        expect(
          (await get(t.app, '/backend-api/conversation/not-a-uuid', { 'x-user-id': user })).status,
        ).toBe(422)
        expect(
          (
            await get(t.app, `/backend-api/conversation/${crypto.randomUUID()}`, {
              'x-user-id': user,
            })
          ).status,
        ).toBe(404)
        expect((await get(t.app, `/backend-api/conversation/${crypto.randomUUID()}`)).status).toBe(
          401,
        )
      })
    })
  })
