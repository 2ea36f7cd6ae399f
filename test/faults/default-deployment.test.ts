// The service as a user deploys it by default, as real server processes - one,
// then two on one Postgres and one Redis - with REDIS_URL only (the cache and
// the turn state on ONE Redis server, told apart by key prefix), the rate
// limits at their defaults (RATE_LIMIT_REQUESTS 600, RATE_LIMIT_SENDS 30),
// the near cache on (CONTRACT §14): while that Redis is frozen (SIGSTOP) or
// killed, and while Postgres is frozen or dropped (a fault proxy), a read, a
// list, a send, a resume, a stop and a stream_status each answer within a
// bound - 200 or a §3 503, never a hang or a 500 - on every instance; and
// once the store is back, sends and reads work again. The bounds are the
// contract's (a read ~1 s, a send ~3 s) with room for a loaded 2-core machine.
// Set FAULT_TIMINGS=1 to print every latency measured.
//
// Needs a redis-server binary (a private server the test can stop) and
// TEST_DATABASE_URL (each instance count gets a fresh schema).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Db } from '../../src/storage/db.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { TEST_DATABASE_URL, uniqueName } from '../support/backends.ts'
import { type FaultProxy, startFaultProxy, targetOf, throughProxy } from '../support/fault-proxy.ts'
import { type PrivateRedis, REDIS_SERVER, startPrivateRedis } from '../support/redis-server.ts'
import {
  appendedChunks,
  killAllServers,
  reading,
  type Server,
  send,
  sleep,
  startReadyServer,
} from '../support/server-process.ts'
import { completeFrames, frameData } from '../support/sse-frames.ts'

const skipReason = !REDIS_SERVER
  ? 'redis-server is not installed'
  : !TEST_DATABASE_URL
    ? 'set TEST_DATABASE_URL'
    : undefined
if (skipReason) console.log(`default-deployment.test.ts skipped: ${skipReason}`)

/**
 * CONTRACT §14 bounds (a read ~1 s, a send ~3 s). A read pays one deadline
 * (CACHE_TIMEOUT_MS, 500 ms; measured 502-506 ms): cache and state are on one
 * Redis, so the first of their breakers to open opens the other
 * (store-breaker.ts, BreakerLink) instead of a read waiting for each in turn
 * (1.0 s before). The rest is room for a loaded machine.
 */
const READ_BOUND_MS = 1_000
const SEND_BOUND_MS = 3_500
/** Resume, stop and stream status need the turn state, like a send. */
const STATE_BOUND_MS = 3_500
/**
 * With Postgres down, every request that needs it waits at most
 * DATABASE_TIMEOUT_MS (2 s by default), then answers 503; plus the same room.
 */
const DATABASE_BOUND_MS = 3_500
/** No request may take longer than this: past it the test reports a hang, not a timeout. */
const HANG_MS = 15_000
const LONG =
  'please answer at some length so that the reply takes a while to stream, word after word, ' +
  'long enough for the store to fail while it is still running'

const timings: string[] = []
const printTimings = process.env.FAULT_TIMINGS === '1'

interface Answer {
  status: number
  ms: number
  body: string
}

/** Runs one request to its end (the whole body), timed; a hang fails after HANG_MS. */
async function timed(request: (signal: AbortSignal) => Promise<Response>): Promise<Answer> {
  const started = performance.now()
  const response = await request(AbortSignal.timeout(HANG_MS))
  const body = await response.text()
  return { status: response.status, ms: performance.now() - started, body }
}

/** 200, or a §3 503 service_unavailable: anything else (a 500, a hang) fails. */
function expectAnsweredOrUnavailable(answer: Answer, what: string) {
  if (answer.status === 200) return
  expect({ what, status: answer.status }).toEqual({ what, status: 503 })
  expect(JSON.parse(answer.body)).toMatchObject({ code: 'service_unavailable' })
}

const headers = (userId: string) => ({ 'content-type': 'application/json', 'x-user-id': userId })

for (const instances of [1, 2])
  describe.skipIf(skipReason !== undefined)(
    `the default deployment, ${instances} instance${instances > 1 ? 's' : ''}`,
    () => {
      let redis: PrivateRedis
      let postgres: FaultProxy
      let admin: Db
      let schema: string
      let servers: Server[] = []

      beforeAll(async () => {
        const url = TEST_DATABASE_URL as string
        schema = uniqueName('defaults')
        admin = createPostgresDb(url, { max: 1 })
        await admin.exec(`CREATE SCHEMA ${schema}`)
        const db = createPostgresDb(url, { schema, max: 1 })
        await migrate(db)
        await db.close()
        redis = await startPrivateRedis()
        postgres = await startFaultProxy(targetOf(url))
        const databaseUrl = new URL(throughProxy(url, postgres))
        databaseUrl.searchParams.set('search_path', `${schema},public`)
        // What a user sets: where Postgres and Redis are. Everything else is a
        // default (the model's chunk delay too, so a reply runs for a while).
        const env = {
          DATABASE_URL: databaseUrl.toString(),
          REDIS_URL: redis.url,
          LOCAL_MODEL_CHUNK_DELAY_MS: '20',
        }
        servers = await Promise.all(Array.from({ length: instances }, () => startReadyServer(env)))
      }, 60_000)

      afterAll(async () => {
        await killAllServers()
        await redis.stop()
        await postgres.close()
        await admin.exec(`DROP SCHEMA ${schema} CASCADE`)
        await admin.close()
      }, 30_000)

      /** A user with a finished conversation, its history and list read (and so cached) on every instance. */
      async function knownUser() {
        const userId = uniqueName('user')
        const first = servers[0] as Server
        const body = await (await send(first.base, userId, 'hello')).text()
        expect(body).toContain('data: [DONE]')
        const conversationId = frameData<{ conversation_id: string }>(
          completeFrames(body)[1],
        ).conversation_id
        for (const server of servers) {
          expect((await detail(server, userId, conversationId)).status).toBe(200)
          expect((await list(server, userId)).status).toBe(200)
        }
        return { userId, conversationId }
      }

      /** A turn still streaming on the first instance: its token and conversation. */
      async function runningTurn() {
        const userId = uniqueName('user')
        const first = servers[0] as Server
        const stream = reading(await send(first.base, userId, LONG))
        await stream.until((text) => appendedChunks(completeFrames(text).join('')).length >= 2)
        const started = frameData<{ token: string; conversation_id: string }>(
          completeFrames(stream.text())[1],
        )
        return { userId, token: started.token, conversationId: started.conversation_id, stream }
      }

      const detail = (server: Server, userId: string, conversationId: string) =>
        timed((signal) =>
          fetch(`${server.base}/backend-api/conversation/${conversationId}`, {
            headers: headers(userId),
            signal,
          }),
        )
      const list = (server: Server, userId: string) =>
        timed((signal) =>
          fetch(`${server.base}/backend-api/conversations`, { headers: headers(userId), signal }),
        )
      const sendTimed = (server: Server, userId: string, extra: Record<string, unknown> = {}) =>
        timed((signal) =>
          fetch(`${server.base}/backend-api/f/conversation`, {
            method: 'POST',
            headers: headers(userId),
            body: JSON.stringify({
              user_id: userId,
              messages: [
                { role: 'user', content: { content_type: 'text', parts: ['still there?'] } },
              ],
              ...extra,
            }),
            signal,
          }),
        )
      const resume = (server: Server, turn: { token: string; conversationId: string }) =>
        timed((signal) =>
          fetch(`${server.base}/backend-api/f/conversation/resume`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-conduit-token': turn.token },
            body: JSON.stringify({ conversation_id: turn.conversationId, offset: 0 }),
            signal,
          }),
        )
      const stop = (server: Server, userId: string, conversationId: string) =>
        timed((signal) =>
          fetch(`${server.base}/backend-api/stop_conversation`, {
            method: 'POST',
            headers: headers(userId),
            body: JSON.stringify({ conversation_id: conversationId }),
            signal,
          }),
        )
      const streamStatus = (server: Server, userId: string, conversationId: string) =>
        timed((signal) =>
          fetch(`${server.base}/backend-api/conversation/${conversationId}/stream_status`, {
            headers: headers(userId),
            signal,
          }),
        )

      /**
       * Every kind of request on every instance while the fault lasts, each
       * within its bound. The first request after a fault pays the deadlines
       * (`first` says which kind comes first); with Redis down, a second round
       * must find nothing waiting for it at all for long (Postgres has no
       * breaker: each request waits its deadline again, as the first did).
       */
      async function expectBounded(
        fault: string,
        known: Awaited<ReturnType<typeof knownUser>>,
        turn: Awaited<ReturnType<typeof runningTurn>>,
        store: 'redis' | 'postgres',
        first: 'read' | 'send' = 'read',
      ) {
        const readBound = store === 'redis' ? READ_BOUND_MS : DATABASE_BOUND_MS
        for (const round of store === 'redis' ? [1, 2] : [1])
          for (const [index, server] of servers.entries()) {
            const fresh = uniqueName('user')
            type Kind = 'read' | 'send' | 'state'
            const requests: [string, Kind, () => Promise<Answer>][] = [
              // A user never seen: nothing cached anywhere, no rate-limit points reserved.
              ['list (new user)', 'read', () => list(server, fresh)],
              ['detail', 'read', () => detail(server, known.userId, known.conversationId)],
              ['list', 'read', () => list(server, known.userId)],
              // A known user's send may find requests points reserved in the
              // process: then its own sends check waits the state's deadline.
              [
                'send',
                'send',
                () => sendTimed(server, known.userId, { conversation_id: known.conversationId }),
              ],
              ['send (new user)', 'send', () => sendTimed(server, fresh)],
              ['resume', 'state', () => resume(server, turn)],
              [
                'stream_status',
                'state',
                () => streamStatus(server, turn.userId, turn.conversationId),
              ],
              ['stop', 'state', () => stop(server, turn.userId, turn.conversationId)],
            ]
            if (first === 'send')
              requests.sort(([, a], [, b]) => Number(b === 'send') - Number(a === 'send'))
            const bounds = { read: readBound, send: SEND_BOUND_MS, state: STATE_BOUND_MS }
            for (const [what, kind, request] of requests) {
              const answer = await request()
              timings.push(
                `${instances} instance(s), ${fault}, ${first} first, round ${round}, instance ${index + 1}: ${what} ${answer.status} in ${Math.round(answer.ms)} ms`,
              )
              expect({ what, ms: answer.ms < bounds[kind] }).toEqual({ what, ms: true })
              // The database answers: so does every read, from it or from a copy.
              if (store === 'redis' && kind === 'read')
                expect({ what, status: answer.status }).toEqual({ what, status: 200 })
              else expectAnsweredOrUnavailable(answer, what)
            }
          }
      }

      /** A send on every instance streams to [DONE] again, within withinMs of the store being back. */
      async function expectSendsWorkAgain(
        known: { userId: string; conversationId: string },
        withinMs: number,
      ) {
        const back = performance.now()
        const deadline = Date.now() + withinMs
        for (const server of servers)
          for (;;) {
            const answer = await sendTimed(server, known.userId, {
              conversation_id: known.conversationId,
            })
            if (answer.status === 200 && answer.body.includes('data: [DONE]')) break
            if (Date.now() > deadline)
              throw new Error(`sends did not work again within ${withinMs} ms: ${answer.body}`)
            await sleep(200)
          }
        timings.push(
          `${instances} instance(s): sends work again on every instance ${Math.round(performance.now() - back)} ms after the store is back`,
        )
      }

      for (const first of ['read', 'send'] as const)
        test(`Redis frozen (SIGSTOP), a ${first} first: reads answer, sends and the turn state answer or 503, all within bounds; thawed, it all works`, async () => {
          const known = await knownUser()
          const turn = await runningTurn()
          redis.freeze()
          try {
            await expectBounded('Redis frozen', known, turn, 'redis', first)
            // The detail read during the freeze came from the database or a copy
            // no older than it: it holds the known conversation.
            const during = await detail(
              servers.at(-1) as Server,
              known.userId,
              known.conversationId,
            )
            expect(during.status).toBe(200)
            expect(during.body).toContain('hello')
          } finally {
            redis.thaw()
            await turn.stream.cancel().catch(() => {})
          }
          await expectSendsWorkAgain(known, 10_000)
          // Every instance reads what the sends after the thaw stored: no copy from before.
          for (const server of servers) {
            const after = await detail(server, known.userId, known.conversationId)
            const { messages } = JSON.parse(after.body) as {
              messages: { content: { parts: string[] } }[]
            }
            const asked = messages.filter((m) => m.content.parts.join('') === 'still there?')
            expect(asked).toHaveLength(instances)
          }
        }, 120_000)

      test('Redis killed: the same bounds; restarted (empty), it all works again', async () => {
        const known = await knownUser()
        const turn = await runningTurn()
        await redis.kill()
        try {
          await expectBounded('Redis killed', known, turn, 'redis')
        } finally {
          await redis.start()
          await turn.stream.cancel().catch(() => {})
        }
        await expectSendsWorkAgain(known, 15_000)
      }, 120_000)

      for (const fault of ['freeze', 'drop'] as const)
        test(`Postgres ${fault === 'freeze' ? 'frozen' : 'dropped'}: every request answers or 503s within bounds; back, it all works`, async () => {
          const known = await knownUser()
          const turn = await runningTurn()
          postgres[fault]()
          try {
            await expectBounded(`Postgres ${fault}`, known, turn, 'postgres')
          } finally {
            postgres.pass()
            await turn.stream.cancel().catch(() => {})
          }
          await expectSendsWorkAgain(known, 15_000)
        }, 120_000)
    },
  )

afterAll(() => {
  if (printTimings) console.log(timings.join('\n'))
})
