// With the database unreachable, the conversation API answers 503 with the
// §3 body (no driver text), and a cache hit is still served.
import { afterAll, expect, test } from 'bun:test'
import { historyKey } from '../../src/conversation/reads/cache-keys.ts'
import { isDatabaseUnavailable } from '../../src/storage/db.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationApp,
  get,
  newUser,
  post,
  type TestApp,
  textMessage,
} from '../support/conversation-app.ts'

// Port 1 on loopback: nothing listens there, so connecting fails at once.
const deadDb = createPostgresDb('postgres://postgres@127.0.0.1:1/none', { max: 1 })
// Closing waits up to 5 s for statements still trying to connect (postgres.ts): more than a hook's default.
afterAll(() => deadDb.close(), 10_000)

// The cache is the backend's own: a cache hit is served without the database.
describeEachBackend({ db: deadDb }, (t, backend) => {
  async function expectUnavailable(response: Response) {
    expect(response.status).toBe(503)
    expect(await response.json()).toEqual({
      detail: 'The database is unavailable; try again shortly.',
      code: 'service_unavailable',
    })
  }

  /** Logs of `user`'s turns left open: a refused send must leave none. */
  const openLogsOf = async (app: TestApp, user: string) =>
    (await app.state.logs.unfinished(0, 10_000)).filter((log) => log.userId === user)

  test('a send is 503 and leaves no turn log behind', async () => {
    const user = newUser()
    await expectUnavailable(
      await post(t.app, '/backend-api/f/conversation', {
        user_id: user,
        messages: [textMessage('anyone there?')],
      }),
    )
    expect(await openLogsOf(t, user)).toEqual([])
  })

  test('a send whose lease the state store cannot grant is 503 and leaves no turn log', async () => {
    const state = await backend.state()
    const stateDown = Object.assign(new Error('Connection is closed.'), { code: 'ECONNRESET' })
    const failing = await conversationApp({
      backend,
      leases: { ...state.leases, acquire: () => Promise.reject(stateDown) },
    })
    const user = newUser()
    const response = await post(failing.app, '/backend-api/f/conversation', {
      user_id: user,
      messages: [textMessage('is the state store there?')],
    })
    expect(response.status).toBe(503)
    expect(await openLogsOf(failing, user)).toEqual([])
    const list = await get(failing.app, '/backend-api/conversations', { 'x-user-id': user })
    expect(await list.json()).toMatchObject({ items: [], total: 0 })
    // The state is the backend's, shared by every app of this process: it stays open.
    await failing.conversations.close()
  })

  test('reads that miss the cache are 503', async () => {
    const headers = { 'x-user-id': newUser() }
    await expectUnavailable(await get(t.app, '/backend-api/conversations', headers))
    await expectUnavailable(
      await get(t.app, `/backend-api/conversation/${crypto.randomUUID()}`, headers),
    )
  })

  test('a history cache hit does not need the database', async () => {
    const user = newUser()
    const cid = crypto.randomUUID()
    const body = JSON.stringify({ conversation_id: cid, messages: [] })
    await t.cache.set(historyKey(cid), `{"owner":${JSON.stringify(user)},"body":${body}}`, 600)
    const response = await get(t.app, `/backend-api/conversation/${cid}`, { 'x-user-id': user })
    expect(response.status).toBe(200)
    expect(await response.text()).toBe(body)
  })
})

test('statement errors are not mistaken for an outage', () => {
  expect(isDatabaseUnavailable({ code: '23505' })).toBe(false)
  expect(isDatabaseUnavailable(new Error('plain'))).toBe(false)
  expect(isDatabaseUnavailable({ code: '08006' })).toBe(true)
  expect(isDatabaseUnavailable({ code: '57P01' })).toBe(true)
  // Cancelled (another statement's deadline may cancel the one after it): try again, not a 500.
  expect(isDatabaseUnavailable({ code: '57014' })).toBe(true)
  expect(isDatabaseUnavailable({ code: 'ECONNREFUSED' })).toBe(true)
})
