// The conversation API while Postgres is frozen (nothing answers, connections
// stay open) or dropped (connections cut, new ones refused), through a TCP
// fault proxy: requests answer 503 within about the database timeout instead
// of hanging, and a reply that streamed in full while its final write could
// not reach the database is kept - the stream ends as the reply did - and
// stored exactly so once the database answers again, on every turn-state
// backend (in-process logs, Redis logs). The rate limits are at their
// defaults, counted in the turn state's store.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Db } from '../../src/storage/db.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { appBackends, openPostgresSchema, TEST_DATABASE_URL } from '../support/backends.ts'
import {
  conversationApp,
  dataOf,
  defaultRateLimits,
  framesOf,
  get,
  newUser,
  post,
  type TestApp,
  textMessage,
} from '../support/conversation-app.ts'
import { type FaultProxy, startFaultProxy, targetOf, throughProxy } from '../support/fault-proxy.ts'
import { reading, sleep } from '../support/server-process.ts'
import { type GatedModel, gatedModel } from '../support/test-models.ts'

/** The database deadline of these tests: short, so outages are seen fast. */
const DB_TIMEOUT_MS = 1_000

async function eventually<T>(check: () => Promise<T | undefined>, withinMs: number): Promise<T> {
  const deadline = Date.now() + withinMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms`)
    await sleep(50)
  }
}

if (TEST_DATABASE_URL) {
  const databaseUrl = TEST_DATABASE_URL
  for (const backend of appBackends())
    describe(`Postgres behind a fault proxy, ${backend.name} turn state`, () => {
      let proxy: FaultProxy
      /** The same schema, straight to Postgres: to see what is stored while the proxy is faulted. */
      let direct: Db
      let proxied: Db
      let model: GatedModel
      let limits: Awaited<ReturnType<typeof defaultRateLimits>>
      let t: TestApp

      beforeAll(async () => {
        direct = await openPostgresSchema(databaseUrl)
        const [row] = await direct.query<{ schema: string }>('SELECT current_schema() AS schema')
        proxy = await startFaultProxy(targetOf(databaseUrl))
        proxied = createPostgresDb(throughProxy(databaseUrl, proxy), {
          schema: row?.schema,
          timeoutMs: DB_TIMEOUT_MS,
        })
        // Two chunks, then the last one; after hold(), only once released.
        model = gatedModel({ before: ['Kept ', 'through '], after: ['the outage.'], open: true })
        limits = await defaultRateLimits(backend)
        t = await conversationApp({
          rateLimits: limits.limits,
          backend,
          db: proxied,
          model,
          // Sweeps every 150 ms for turns older than 300 ms.
          env: { TURN_LEASE_MS: '300' },
        })
        t.conversations.startRecovery()
      })
      // Closing the pool waits up to its 5 s grace for statements the frozen
      // proxy swallowed (their cancel requests were swallowed too): more than
      // bun's default hook timeout.
      afterAll(async () => {
        proxy.pass()
        await limits.close()
        await t.conversations.close()
        await proxied.close()
        await proxy.close()
      }, 15_000)

      const send = (user: string) =>
        post(t.app, '/backend-api/f/conversation', {
          user_id: user,
          messages: [textMessage('hello')],
        })

      async function expectUnavailableFast(request: () => Promise<Response>) {
        const started = performance.now()
        const response = await request()
        const ms = performance.now() - started
        expect(response.status).toBe(503)
        expect(((await response.json()) as { code: string }).code).toBe('service_unavailable')
        // About one database deadline, never a hang (generous for a busy machine).
        expect(ms).toBeLessThan(DB_TIMEOUT_MS + 2_000)
      }

      for (const fault of ['freeze', 'drop'] as const)
        test(`${fault}: sends and reads answer 503 fast, and work again when it is back`, async () => {
          const user = newUser()
          proxy[fault]()
          try {
            await expectUnavailableFast(() => send(user))
            await expectUnavailableFast(() =>
              get(t.app, '/backend-api/conversations', { 'x-user-id': user }),
            )
            await expectUnavailableFast(() =>
              get(t.app, `/backend-api/conversation/${crypto.randomUUID()}`, {
                'x-user-id': user,
              }),
            )
          } finally {
            proxy.pass()
          }
          const again = await eventually(async () => {
            const response = await send(user)
            if (response.status === 200) return response
            await response.arrayBuffer()
            return undefined
          }, 10_000)
          expect(framesOf(await again.text()).at(-1)?.data).toBe('[DONE]')
        }, 30_000)

      for (const fault of ['freeze', 'drop'] as const)
        test(`${fault} before the final write: the streamed reply is kept and stored when the database is back`, async () => {
          const user = newUser()
          model.hold()
          const response = await send(user)
          expect(response.status).toBe(200)
          const stream = reading(response)
          await stream.until((text) => text.includes('through '))
          const conversationId = dataOf<{ conversation_id: string }>(
            framesOf(stream.text())[1],
          ).conversation_id

          proxy[fault]()
          model.release()
          const ended = performance.now()
          const body = await stream.until((text) => text.includes('data: [DONE]'))
          // The stream ends as the reply did: no error item, a normal completion.
          expect(performance.now() - ended).toBeLessThan(DB_TIMEOUT_MS + 3_000)
          const items = framesOf(body).map((frame) => frame.data)
          expect(items.some((data) => data.includes('"type":"error"'))).toBe(false)
          expect(body).toContain('"finish_details":{"type":"stop"}')

          const reply = async () => {
            const [row] = await direct.query<{
              status: string
              content: { content_type: string; parts: string[] }
            }>(
              `SELECT status, content FROM messages
                WHERE conversation_id = $1 AND role = 'assistant'`,
              [conversationId],
            )
            return row
          }
          // Not stored while the database is unreachable from the service...
          await sleep(DB_TIMEOUT_MS)
          expect((await reply())?.status).toBe('in_progress')

          proxy.pass()
          // ...and stored, whole and finished, once it answers again.
          const stored = await eventually(async () => {
            const row = await reply()
            return row?.status === 'in_progress' ? undefined : row
            // Within a few sweeps; generous, as a loaded machine slows every statement.
          }, 25_000)
          expect(stored).toEqual({
            status: 'finished_successfully',
            content: { content_type: 'text', parts: ['Kept through the outage.'] },
          })
          // The user sees it afterwards.
          const detail = await get(t.app, `/backend-api/conversation/${conversationId}`, {
            'x-user-id': user,
          })
          const messages = (
            (await detail.json()) as { messages: { content: { parts: string[] } }[] }
          ).messages
          expect(messages.map((message) => message.content.parts.join(''))).toEqual([
            'hello',
            'Kept through the outage.',
          ])
        }, 60_000)
    })
}
