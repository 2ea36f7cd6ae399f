// Admission control (src/http/admission.ts, CONTRACT §19): past its capacity
// an instance sheds a new send at once with 503 {"detail","code":"overloaded"}
// and Retry-After, stores nothing, counts it in conduit_overloaded_total, and
// keeps running turns streaming; resumes and reads are never shed.
//
// In process, on every app backend, with a stand-in for the event-loop lag
// and the real count of running turns; then over a real server process, where
// open requests are Bun's own count: streams held open past MAX_OPEN_REQUESTS
// make the next send 503 while they still end with [DONE].
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { Elysia } from 'elysia'
import { overloadOf } from '../src/http/admission.ts'
import { errorHandlerWith } from '../src/http/error-handler.ts'
import { createMetrics } from '../src/observability/metrics.ts'
import { StoreOverloadedError } from '../src/storage/store-failure.ts'
import { appBackends } from './support/backends.ts'
import {
  conversationApp,
  get,
  newUser,
  post,
  type TestApp,
  textMessage,
} from './support/conversation-app.ts'
import {
  killAllServers,
  reading,
  type Server,
  send,
  startReadyServer,
} from './support/server-process.ts'
import { sseReader } from './support/sse-reader.ts'

// The shared app backends are closed once, after every file (test/support/preload.ts).
afterAll(killAllServers)

const SEND = '/backend-api/f/conversation'
const LIMITS = { maxOpenRequests: 10, maxRunningTurns: 10, overloadLagMs: 200 }

/** A 503 overloaded with Retry-After, as a client sees it. */
async function expectOverloaded(response: Response) {
  expect(response.status).toBe(503)
  expect(response.headers.get('retry-after')).toBe('1')
  const body = (await response.json()) as Record<string, unknown>
  expect(Object.keys(body)).toEqual(['detail', 'code'])
  expect(body.code).toBe('overloaded')
  expect(body.detail).toBeString()
}

/** How many conversations the user has (0 = a shed send stored nothing). */
async function conversationsOf(app: TestApp['app'], user: string): Promise<number> {
  const response = await get(app, '/backend-api/conversations', { 'x-user-id': user })
  expect(response.status).toBe(200)
  return ((await response.json()) as { total: number }).total
}

test('what sheds a send: open requests over the limit, running turns at it, lag at the threshold', () => {
  const load = (open: number, running: number, lag: number) => ({
    openRequests: () => open,
    turns: { running: () => running },
    lag: { recentLagMs: () => lag },
  })
  expect(overloadOf(LIMITS, load(10, 9, 199))).toBeUndefined()
  expect(overloadOf(LIMITS, load(11, 0, 0))).toBe('open_requests')
  expect(overloadOf(LIMITS, load(1, 10, 0))).toBe('running_turns')
  expect(overloadOf(LIMITS, load(1, 0, 200))).toBe('event_loop_lag')
  // OVERLOAD_LAG_MS=0: lag is not looked at; no readings: nothing is shed for them.
  expect(overloadOf({ ...LIMITS, overloadLagMs: 0 }, load(1, 0, 60_000))).toBeUndefined()
  expect(overloadOf(LIMITS, { openRequests: () => 1 })).toBeUndefined()
})

for (const backend of appBackends())
  describe(`admission control (${backend.name})`, () => {
    const lag = { ms: 0 }
    const metrics = createMetrics({ processMetrics: false })
    let t: TestApp

    beforeAll(async () => {
      t = await conversationApp({
        backend,
        env: { OVERLOAD_LAG_MS: '200', MAX_RUNNING_TURNS: '1', LOCAL_MODEL_CHUNK_DELAY_MS: '5' },
        metrics,
        eventLoopLag: { recentLagMs: () => lag.ms, lagSince: () => 0, reset() {}, stop() {} },
      })
    })

    test('with the event loop lagging, a send is shed before anything is stored; reads and resumes go on', async () => {
      await t.conversations.whenIdle()
      lag.ms = 250
      try {
        const user = newUser()
        await expectOverloaded(
          await post(t.app, SEND, { user_id: user, messages: [textMessage('Hello')] }),
        )
        // Shed before its body is looked at: malformed, hostile or oversized alike.
        await expectOverloaded(await post(t.app, `${SEND}?x=1`, '{"user_id":'))
        await expectOverloaded(
          await post(t.app, SEND, { user_id: user, messages: [textMessage('\u0000'.repeat(10))] }),
        )
        await expectOverloaded(
          await post(t.app, SEND, {
            user_id: user,
            messages: [textMessage('x'.repeat(2_000_000))],
          }),
        )
        expect(await conversationsOf(t.app, user)).toBe(0)
        // Not a send: a resume (here without its token) and reads are answered as ever.
        const resume = await post(t.app, `${SEND}/resume`, {
          conversation_id: randomUUID(),
          offset: 0,
        })
        expect(resume.status).toBe(401)
        const metricsText = await (await get(t.app, '/metrics')).text()
        expect(metricsText).toContain('conduit_overloaded_total{reason="event_loop_lag"} 4')
      } finally {
        lag.ms = 0
      }
      const user = newUser()
      const ok = await post(t.app, SEND, { user_id: user, messages: [textMessage('Hello')] })
      expect(ok.status).toBe(200)
      expect(await ok.text()).toContain('data: [DONE]')
    })

    test('at MAX_RUNNING_TURNS a new send is shed while the running turn streams on to [DONE]', async () => {
      // The previous test's turn has ended, stored and let go of its lease.
      await t.conversations.whenIdle()
      const user = newUser()
      const running = sseReader(
        await post(t.app, SEND, {
          user_id: user,
          messages: [textMessage('one two three four five six seven eight nine ten')],
        }),
      )
      // Streaming: the turn runs (its first reply text is out).
      await running.until((frames) => frames.some((frame) => frame.data.includes('"append"')))
      expect(t.conversations.running()).toBeGreaterThanOrEqual(1)
      const other = newUser()
      await expectOverloaded(
        await post(t.app, SEND, { user_id: other, messages: [textMessage('Hello')] }),
      )
      expect(await running.rest()).toContain('data: [DONE]')
      expect(await conversationsOf(t.app, other)).toBe(0)
      await t.conversations.whenIdle()
      expect(t.conversations.running()).toBe(0)
      const metricsText = await (await get(t.app, '/metrics')).text()
      expect(metricsText).toContain('conduit_overloaded_total{reason="running_turns"} 1')
    })
  })

describe('admission control over a real server: MAX_OPEN_REQUESTS', () => {
  let server: Server

  beforeAll(async () => {
    // Replies of 40 chunks 100 ms apart: streams stay open for seconds. The
    // lag is not checked here: a fresh process on embedded PGlite stalls its
    // loop while the first sends compile and query, and this is about counts.
    server = await startReadyServer({
      MAX_OPEN_REQUESTS: '2',
      OVERLOAD_LAG_MS: '0',
      LOCAL_MODEL_CHUNK_DELAY_MS: '100',
      DATABASE_URL: 'memory://',
    })
  }, 60_000)

  test('with two streams open, the next send is 503 overloaded; the held streams end with [DONE]', async () => {
    const words = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ')
    const held = await Promise.all([
      send(server.base, newUser(), words),
      send(server.base, newUser(), words),
    ])
    const readers = held.map((response) => {
      expect(response.status).toBe(200)
      return reading(response)
    })
    // Both streaming (first reply text out), so both are open on the server.
    for (const reader of readers) await reader.until((text) => text.includes('"append"'))

    const shedUser = newUser()
    const shed = await send(server.base, shedUser, 'Hello')
    await expectOverloaded(shed)

    // Reads are not shed, and the shed send stored nothing.
    const list = await fetch(`${server.base}/backend-api/conversations`, {
      headers: { 'x-user-id': shedUser },
    })
    expect(list.status).toBe(200)
    expect(((await list.json()) as { total: number }).total).toBe(0)

    for (const reader of readers)
      expect(await reader.until((text) => text.includes('data: [DONE]'))).toContain('data: [DONE]')
    const metricsText = await (await fetch(`${server.base}/metrics`)).text()
    expect(metricsText).toContain('conduit_overloaded_total{reason="open_requests"} 1')
    expect(metricsText).toContain('# TYPE conduit_event_loop_lag_seconds gauge')
  }, 60_000)
})

test('a store deadline missed while this process lagged answers 503 overloaded, counted as database_deadline', async () => {
  const metrics = createMetrics({ processMetrics: false })
  const logged: string[] = []
  const app = new Elysia()
    .use(
      errorHandlerWith({ error: (_fields, message) => logged.push(message) }, metrics.overloaded),
    )
    .get('/busy', () => {
      throw new StoreOverloadedError('database')
    })
    .get('/broken', () => {
      throw new Error('a bug')
    })
  await expectOverloaded(await app.handle(new Request('http://localhost/busy')))
  await expectOverloaded(await app.handle(new Request('http://localhost/busy')))
  expect((await app.handle(new Request('http://localhost/broken'))).status).toBe(500)
  const text = await metrics.registry.metrics()
  expect(text).toContain('conduit_overloaded_total{reason="database_deadline"} 2')
  // Overload is expected under load: not logged as an unhandled error; the bug is.
  expect(logged).toEqual(['unhandled error'])
})
