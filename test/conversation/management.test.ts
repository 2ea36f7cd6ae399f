// Conversation management over HTTP (CONTRACT §11): PATCH one conversation
// (title, archive, delete) and all of them, the list's archive filter, search,
// reply feedback, and GET /models (§9, §15). Every change drops the cached keys it
// makes stale; bad input is a §3 error that changes nothing; someone else's
// conversation answers like a missing one.
import { describe, expect, test } from 'bun:test'
import { contextKey, historyKey, listKey } from '../../src/conversation/reads/cache-keys.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationApp,
  dataOf,
  get,
  newUser,
  post,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'
import { bearerFor } from '../support/identity-token.ts'

interface ListBody {
  items: { id: string; title: string; is_archived: boolean }[]
  total: number
}
interface SearchBody {
  items: { id: string; title: string; snippet: string; updated_at: string }[]
}

describeEachBackend({}, (t, backend) => {
  const asUser = (user: string) => ({ 'x-user-id': user })

  function send(method: string, path: string, body: unknown, headers: Record<string, string>) {
    return t.app.handle(
      new Request(`http://localhost${path}`, {
        method,
        headers: { 'content-type': 'application/json', ...headers },
        body: typeof body === 'string' ? body : JSON.stringify(body),
      }),
    )
  }
  const patchOne = (cid: string, body: unknown, headers: Record<string, string>) =>
    send('PATCH', `/backend-api/conversation/${cid}`, body, headers)
  const patchAll = (body: unknown, headers: Record<string, string>) =>
    send('PATCH', '/backend-api/conversations', body, headers)

  /** A new conversation of one turn; resolves once its runner is idle. */
  async function start(user: string, text: string) {
    const sent = await sendAndRead(t.app, { user_id: user, messages: [textMessage(text)] })
    await t.conversations.whenIdle()
    const token = dataOf<{ token: string; conversation_id: string }>(sent.frames[1])
    const add = dataOf<{ v: { message: { id: string } } }>(sent.frames[3])
    return { cid: token.conversation_id, replyId: add.v.message.id, token: token.token }
  }

  async function say(user: string, cid: string, text: string) {
    await sendAndRead(t.app, {
      user_id: user,
      conversation_id: cid,
      messages: [textMessage(text)],
    })
    await t.conversations.whenIdle()
  }

  async function list(user: string, query = '') {
    const response = await get(t.app, `/backend-api/conversations${query}`, asUser(user))
    expect(response.status).toBe(200)
    return (await response.json()) as ListBody
  }

  const detailStatus = async (cid: string, user: string) =>
    (await get(t.app, `/backend-api/conversation/${cid}`, asUser(user))).status

  /** A §3 error: the status, exactly detail and code, and the detail naming what was wrong. */
  async function expectError(response: Response, status: number, detail?: RegExp) {
    expect(response.status).toBe(status)
    const body = (await response.json()) as { detail: string; code: string }
    expect(Object.keys(body).sort()).toEqual(['code', 'detail'])
    if (detail) expect(body.detail).toMatch(detail)
  }

  const cached = (key: string) => t.cache.get(key)

  describe('PATCH /backend-api/conversation/{id}', () => {
    test('a new title is listed, and drops the cached list and history', async () => {
      const user = newUser()
      const { cid } = await start(user, 'first title')
      await list(user)
      expect(await detailStatus(cid, user)).toBe(200)
      expect(await cached(listKey(user))).not.toBeNull()
      expect(await cached(historyKey(cid))).not.toBeNull()

      const response = await patchOne(cid, { title: 'Renamed ✓' }, asUser(user))
      expect(response.status).toBe(200)
      expect(await response.json()).toStrictEqual({ success: true })
      expect(await cached(listKey(user))).toBeNull()
      expect(await cached(historyKey(cid))).toBeNull()
      expect((await list(user)).items.map((i) => i.title)).toEqual(['Renamed ✓'])

      const longest = 'x'.repeat(256)
      expect((await patchOne(cid, { title: longest }, asUser(user))).status).toBe(200)
      expect((await list(user)).items[0]?.title).toBe(longest)
    })

    test('bad titles, values and bodies are 422 and change nothing, not even the cache', async () => {
      const user = newUser()
      const { cid } = await start(user, 'keep this title')
      const before = await list(user)
      const cachedList = await cached(listKey(user))
      expect(cachedList).not.toBeNull()
      const bad: [unknown, RegExp][] = [
        [{ title: '' }, /"title"/],
        [{ title: '   ' }, /"title"/],
        [{ title: 'x'.repeat(257) }, /"title"/],
        [{ title: 5 }, /"title"/],
        [{ title: null }, /"title"/],
        [{ title: 'two\nlines' }, /"title"/],
        [{ title: 'nul\u0000byte' }, /"title"/],
        [{ is_archived: 'yes' }, /"is_archived"/],
        [{ is_archived: 1 }, /"is_archived"/],
        [{ is_archived: null }, /"is_archived"/],
        [{ is_visible: true }, /"is_visible"/],
        [{ is_visible: 'false' }, /"is_visible"/],
        [{ title: 'fine', is_archived: 'yes' }, /"is_archived"/],
        [{}, /"title", "is_archived", "is_visible"/],
        [{ name: 'not a field of this route' }, /"title", "is_archived", "is_visible"/],
        ['[]', /body/],
        ['"a title"', /body/],
        ['{"title": "unterminated', /JSON/],
      ]
      for (const [body, detail] of bad)
        await expectError(await patchOne(cid, body, asUser(user)), 422, detail)
      expect(await list(user)).toEqual(before)
      expect(await cached(listKey(user))).toBe(cachedList)
    })

    test("someone else's conversation and an unknown one are 404; not a UUID is 422; no user is 401", async () => {
      const owner = newUser()
      const { cid } = await start(owner, 'not yours')
      const stranger = newUser()
      await expectError(await patchOne(cid, { title: 'mine now' }, asUser(stranger)), 404)
      await expectError(await patchOne(cid, { is_archived: true }, asUser(stranger)), 404)
      await expectError(await patchOne(cid, { is_visible: false }, asUser(stranger)), 404)
      await expectError(
        await patchOne(crypto.randomUUID(), { title: 'x' }, asUser(owner)),
        404,
        /not found/,
      )
      await expectError(
        await patchOne('not-a-uuid', { title: 'x' }, asUser(owner)),
        422,
        /"conversation_id"/,
      )
      await expectError(await patchOne(cid, { title: 'x' }, {}), 401)
      const after = await list(owner)
      expect(after.items.map((i) => [i.title, i.is_archived])).toEqual([['not yours', false]])
      expect(await detailStatus(cid, owner)).toBe(200)
    })

    test('archiving moves a conversation to the is_archived=true list, and back', async () => {
      const user = newUser()
      const a = await start(user, 'to archive')
      const b = await start(user, 'to keep')
      expect((await list(user)).total).toBe(2)

      expect((await patchOne(a.cid, { is_archived: true }, asUser(user))).status).toBe(200)
      expect(await cached(listKey(user))).toBeNull()
      const active = await list(user)
      expect(active.items.map((i) => i.id)).toEqual([b.cid])
      expect(active.total).toBe(1)
      const archived = await list(user, '?is_archived=true')
      expect(archived.items.map((i) => [i.id, i.is_archived])).toEqual([[a.cid, true]])
      expect(archived.total).toBe(1)
      // An archived conversation is still readable.
      expect(await detailStatus(a.cid, user)).toBe(200)

      expect((await patchOne(a.cid, { is_archived: false }, asUser(user))).status).toBe(200)
      expect((await list(user)).items.map((i) => i.id)).toEqual([b.cid, a.cid])
      expect((await list(user, '?is_archived=true')).total).toBe(0)
    })

    test('a title and the archive flag change together', async () => {
      const user = newUser()
      const { cid } = await start(user, 'both at once')
      const response = await patchOne(
        cid,
        { title: 'Archived one', is_archived: true },
        asUser(user),
      )
      expect(response.status).toBe(200)
      expect((await list(user, '?is_archived=true')).items.map((i) => i.title)).toEqual([
        'Archived one',
      ])
    })

    test('a delete removes the conversation, its messages, feedback, keys and turn log', async () => {
      const user = newUser()
      const { cid, replyId, token } = await start(user, 'delete me')
      const kept = await start(user, 'keep me')
      expect(
        (
          await post(
            t.app,
            '/backend-api/conversation/message_feedback',
            { conversation_id: cid, message_id: replyId, rating: 'thumbsUp' },
            asUser(user),
          )
        ).status,
      ).toBe(200)
      await list(user)
      expect(await detailStatus(cid, user)).toBe(200)
      expect(await cached(historyKey(cid))).not.toBeNull()
      expect((await t.cache.listAll(contextKey(cid))).length).toBeGreaterThan(0)
      expect(await t.state.logs.info(replyId)).toBeDefined()

      const response = await patchOne(cid, { is_visible: false }, asUser(user))
      expect(response.status).toBe(200)
      expect(await response.json()).toStrictEqual({ success: true })

      expect(await cached(historyKey(cid))).toBeNull()
      expect(await cached(listKey(user))).toBeNull()
      expect(await t.cache.listAll(contextKey(cid))).toEqual([])
      expect(await t.state.logs.info(replyId)).toBeUndefined()
      expect(await detailStatus(cid, user)).toBe(404)
      expect((await list(user)).items.map((i) => i.id)).toEqual([kept.cid])
      const rows = await t.db.query<{ n: number }>(
        `SELECT (SELECT count(*) FROM messages WHERE conversation_id = $1)::int
                + (SELECT count(*) FROM message_feedback WHERE conversation_id = $1)::int AS n`,
        [cid],
      )
      expect(rows[0]?.n).toBe(0)
      const resumed = await post(
        t.app,
        '/backend-api/f/conversation/resume',
        { conversation_id: cid, offset: 0 },
        { 'x-conduit-token': token },
      )
      expect(resumed.status).toBe(404)
      await expectError(await patchOne(cid, { is_visible: false }, asUser(user)), 404)
      expect(await detailStatus(kept.cid, user)).toBe(200)
    })
  })

  describe('PATCH /backend-api/conversations', () => {
    test("archiving all archives the user's conversations, nobody else's", async () => {
      const user = newUser()
      const other = newUser()
      await start(user, 'one')
      await start(user, 'two')
      const theirs = await start(other, 'theirs')
      await list(user)

      const response = await patchAll({ is_archived: true }, asUser(user))
      expect(response.status).toBe(200)
      expect(await response.json()).toStrictEqual({ success: true })
      expect(await cached(listKey(user))).toBeNull()
      expect((await list(user)).total).toBe(0)
      expect((await list(user, '?is_archived=true')).total).toBe(2)
      expect((await list(other)).items.map((i) => [i.id, i.is_archived])).toEqual([
        [theirs.cid, false],
      ])
    })

    test("deleting all deletes the user's conversations, nobody else's", async () => {
      const user = newUser()
      const other = newUser()
      const one = await start(user, 'one')
      const two = await start(user, 'two')
      await patchOne(two.cid, { is_archived: true }, asUser(user))
      const theirs = await start(other, 'theirs')
      for (const { cid } of [one, two]) await detailStatus(cid, user)

      expect((await patchAll({ is_visible: false }, asUser(user))).status).toBe(200)
      for (const { cid, replyId } of [one, two]) {
        expect(await detailStatus(cid, user)).toBe(404)
        expect(await cached(historyKey(cid))).toBeNull()
        expect(await t.state.logs.info(replyId)).toBeUndefined()
      }
      expect((await list(user)).total).toBe(0)
      expect((await list(user, '?is_archived=true')).total).toBe(0)
      expect(await detailStatus(theirs.cid, other)).toBe(200)
      expect(await t.state.logs.info(theirs.replyId)).toBeDefined()
      // Nothing left to delete is still a success.
      expect((await patchAll({ is_visible: false }, asUser(user))).status).toBe(200)
    })

    test('bad bodies are 422 and change nothing; no user is 401', async () => {
      const user = newUser()
      await start(user, 'stays as it is')
      for (const body of [
        {},
        { is_archived: false },
        { is_archived: 'true' },
        { is_visible: true },
        { is_visible: 0 },
        { title: 'not for all' },
      ])
        await expectError(await patchAll(body, asUser(user)), 422, /"is_archived"|"is_visible"/)
      await expectError(await patchAll({ is_visible: false }, {}), 401)
      const after = await list(user)
      expect(after.items.map((i) => [i.title, i.is_archived])).toEqual([['stays as it is', false]])
    })
  })

  describe('GET /backend-api/conversations/search', () => {
    const searchResponse = (user: string, query: string) =>
      get(t.app, `/backend-api/conversations/search?${query}`, asUser(user))
    const search = async (user: string, query: string) => {
      const response = await searchResponse(user, query)
      return { response, body: (await response.json()) as SearchBody }
    }
    const q = (text: string, rest = '') => `query=${encodeURIComponent(text)}${rest}`

    test('finds titles and message text in any case, newest update first, with snippets', async () => {
      const user = newUser()
      const trip = await start(user, 'Planning a trip to KYOTO in spring')
      const groceries = await start(user, 'Groceries for the week')
      await start(user, 'Something unrelated')
      await say(user, groceries.cid, 'and what about the temples of kyoto?')

      const { response, body } = await search(user, q('Kyoto'))
      expect(response.status).toBe(200)
      expect(body.items.map((i) => i.id)).toEqual([groceries.cid, trip.cid])
      const [first, second] = body.items
      expect(Object.keys(first ?? {})).toEqual(['id', 'title', 'snippet', 'updated_at'])
      expect(first?.title).toBe('Groceries for the week')
      // The first message containing the text, around the match.
      expect(first?.snippet).toBe('and what about the temples of kyoto?')
      expect(second?.snippet).toBe('Planning a trip to KYOTO in spring')
      expect(first?.updated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      expect((first?.updated_at ?? '') > (second?.updated_at ?? '')).toBe(true)

      // A title alone matches too (a renamed conversation), with the title as snippet.
      await patchOne(trip.cid, { title: 'Japan itinerary' }, asUser(user))
      const byTitle = (await search(user, q('ITINERARY'))).body.items
      expect(byTitle.map((i) => [i.id, i.snippet])).toEqual([[trip.cid, 'Japan itinerary']])
      expect((await search(user, q('no such words anywhere'))).body.items).toEqual([])
    })

    test('% _ and \\ are matched literally', async () => {
      const user = newUser()
      const percent = await start(user, 'prices 50% lower')
      await start(user, 'prices 5000 lower')
      const underscore = await start(user, 'file_name here')
      await start(user, 'fileXname here')
      const backslash = await start(user, 'path C:\\temp now')
      await start(user, 'path C:temp now')
      const ids = async (text: string) => (await search(user, q(text))).body.items.map((i) => i.id)
      expect(await ids('50%')).toEqual([percent.cid])
      expect(await ids('e_n')).toEqual([underscore.cid])
      expect(await ids(':\\t')).toEqual([backslash.cid])
      expect(await ids('%')).toEqual([percent.cid])
      expect(await ids('_')).toEqual([underscore.cid])
    })

    test("limit bounds the answer; another user's conversations are never found", async () => {
      const user = newUser()
      await start(user, 'needle one')
      const newest = await start(user, 'needle two')
      const limited = await search(user, q('needle', '&limit=1'))
      expect(limited.body.items.map((i) => i.id)).toEqual([newest.cid])
      expect((await search(newUser(), q('needle'))).body.items).toEqual([])
      // Unknown parameters are ignored.
      expect((await search(user, q('needle', '&limit=50&scope=all'))).body.items).toHaveLength(2)
    })

    test('a missing, empty or oversized query and a bad limit are 422; no user is 401', async () => {
      const user = newUser()
      for (const [query, field] of [
        ['', /"query"/],
        ['query=', /"query"/],
        [q('x'.repeat(257)), /"query"/],
        [q('nul\u0000'), /"query"/],
        [q('ok', '&limit=0'), /"limit"/],
        [q('ok', '&limit=51'), /"limit"/],
        [q('ok', '&limit=ten'), /"limit"/],
      ] as const)
        await expectError(await searchResponse(user, query), 422, field)
      await expectError(await get(t.app, `/backend-api/conversations/search?${q('ok')}`), 401)
    })
  })

  describe('POST /backend-api/conversation/message_feedback', () => {
    const FEEDBACK = '/backend-api/conversation/message_feedback'
    const ratings = (cid: string) =>
      t.db.query<{ user_id: string; message_id: string; rating: string; text: string | null }>(
        'SELECT user_id, message_id, rating, text FROM message_feedback WHERE conversation_id = $1',
        [cid],
      )

    test('a rating is stored, and a new one replaces it', async () => {
      const user = newUser()
      const { cid, replyId } = await start(user, 'rate my reply')
      const first = await post(
        t.app,
        FEEDBACK,
        { conversation_id: cid, message_id: replyId, rating: 'thumbsUp', text: 'Great answer' },
        asUser(user),
      )
      expect(first.status).toBe(200)
      expect(await first.json()).toStrictEqual({ success: true })
      expect(await ratings(cid)).toEqual([
        { user_id: user, message_id: replyId, rating: 'thumbsUp', text: 'Great answer' },
      ])
      const again = await post(
        t.app,
        FEEDBACK,
        { conversation_id: cid, message_id: replyId, rating: 'thumbsDown' },
        asUser(user),
      )
      expect(again.status).toBe(200)
      expect(await ratings(cid)).toEqual([
        { user_id: user, message_id: replyId, rating: 'thumbsDown', text: null },
      ])
    })

    test("bad ratings, unknown messages and someone else's conversation change nothing", async () => {
      const user = newUser()
      const { cid, replyId } = await start(user, 'rated once')
      const good = { conversation_id: cid, message_id: replyId, rating: 'thumbsUp' }
      expect((await post(t.app, FEEDBACK, good, asUser(user))).status).toBe(200)
      const history = (await (
        await get(t.app, `/backend-api/conversation/${cid}`, asUser(user))
      ).json()) as { messages: { id: string; role: string }[] }
      const userMessageId = history.messages.find((m) => m.role === 'user')?.id ?? ''

      const bad: [Record<string, unknown>, number, RegExp][] = [
        [{ ...good, rating: 'up' }, 422, /"rating"/],
        [{ ...good, rating: '' }, 422, /"rating"/],
        [{ ...good, rating: 1 }, 422, /"rating"/],
        [{ ...good, rating: null }, 422, /"rating"/],
        [{ conversation_id: cid, message_id: replyId }, 422, /"rating"/],
        [{ ...good, rating: 'thumbsDown', text: 'x'.repeat(10_001) }, 422, /"text"/],
        [{ ...good, rating: 'thumbsDown', text: 'nul\u0000' }, 422, /"text"/],
        [{ ...good, rating: 'thumbsDown', message_id: '' }, 422, /"message_id"/],
        [{ ...good, rating: 'thumbsDown', message_id: 'm'.repeat(129) }, 422, /"message_id"/],
        [{ ...good, rating: 'thumbsDown', conversation_id: 'nope' }, 422, /"conversation_id"/],
        [{ ...good, rating: 'thumbsDown', message_id: 'no-such-message' }, 404, /no-such-message/],
        [{ ...good, rating: 'thumbsDown', message_id: userMessageId }, 404, /reply/],
        [
          { ...good, rating: 'thumbsDown', conversation_id: crypto.randomUUID() },
          404,
          /Conversation not found/,
        ],
      ]
      for (const [body, status, detail] of bad)
        await expectError(await post(t.app, FEEDBACK, body, asUser(user)), status, detail)
      const stranger = newUser()
      await expectError(
        await post(t.app, FEEDBACK, { ...good, rating: 'thumbsDown' }, asUser(stranger)),
        404,
        /Conversation not found/,
      )
      await expectError(await post(t.app, FEEDBACK, { ...good, rating: 'thumbsDown' }), 401)
      expect(await ratings(cid)).toEqual([
        { user_id: user, message_id: replyId, rating: 'thumbsUp', text: null },
      ])
    })
  })

  describe('GET /backend-api/models', () => {
    test("lists the configured model, in chatgpt.com's shape with its category", async () => {
      const response = await get(t.app, '/backend-api/models')
      expect(response.status).toBe(200)
      const body = (await response.json()) as Record<string, unknown>
      expect(body).toMatchObject({
        models: [{ slug: 'local-echo', title: 'local-echo', max_tokens: 8191 }],
        categories: [{ category: 'conduit', default_model: 'local-echo' }],
        default_model_slug: 'local-echo',
      })
      expect((body.models as unknown[]).length).toBe(1)
    })

    test('with JWT auth it needs a token, as every /backend-api route', async () => {
      const secret = 'models-jwt-secret-of-at-least-32-bytes'
      const jwt = await conversationApp({
        backend,
        env: { AUTH_JWT_SECRET: secret, MODEL: 'my-model' },
      })
      expect((await get(jwt.app, '/backend-api/models')).status).toBe(401)
      const response = await get(jwt.app, '/backend-api/models', await bearerFor('someone', secret))
      expect(response.status).toBe(200)
      expect(((await response.json()) as { models: { slug: string }[] }).models[0]?.slug).toBe(
        'my-model',
      )
    })
  })
})
