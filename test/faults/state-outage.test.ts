// The conversation API with its turn-state Redis gone or frozen (CONTRACT §13
// state: logs, leases; §14 deadlines), with the rate limits at their defaults
// counted in that same Redis, as dependencies.ts wires them: a send cannot
// work without it and answers a §3 `503` - not a 500, not a hang - within
// the state's deadline, the next one at once (the state's breaker is open),
// with nothing stored; a read answers (the requests limit counts in the
// process meanwhile); and once Redis answers again, sends work again. The
// database and cache are embedded; the state Redis is reached through a fault
// proxy that drops every connection (a dead server) or freezes them
// (connections open, nothing answers: a SIGSTOPped server).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createConversationService } from '../../src/conversation/service.ts'
import { openModel, openRateLimits } from '../../src/dependencies.ts'
import { openRedisState, type State } from '../../src/state/state.ts'
import { isStateUnavailable } from '../../src/state/state-unavailable.ts'
import type { Db } from '../../src/storage/db.ts'
import { createMemoryCache } from '../../src/storage/memory-cache.ts'
import { StoreUnavailableError } from '../../src/storage/store-breaker.ts'
import { embeddedBackend, TEST_REDIS_URL, uniqueName } from '../support/backends.ts'
import { framesOf, get, newUser, post, textMessage } from '../support/conversation-app.ts'
import { type FaultProxy, startFaultProxy, targetOf, throughProxy } from '../support/fault-proxy.ts'
import { sleep } from '../support/server-process.ts'

test('what counts as the state store being unreachable', () => {
  const maxRetries = new Error('Reached the max retries per request limit (which is 1).')
  maxRetries.name = 'MaxRetriesPerRequestError'
  expect(isStateUnavailable(maxRetries)).toBe(true)
  expect(isStateUnavailable(new Error('Connection is closed.'))).toBe(true)
  expect(isStateUnavailable(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe(true)
  expect(isStateUnavailable(new Error('Command timed out'))).toBe(true)
  expect(isStateUnavailable(new Error('WRONGTYPE Operation against a key'))).toBe(false)
  expect(isStateUnavailable({ code: 'ECONNREFUSED' })).toBe(false)
  // The state's breaker refusing a call (a send while it is open), not the cache's.
  expect(isStateUnavailable(new StoreUnavailableError('state'))).toBe(true)
  expect(isStateUnavailable(new StoreUnavailableError('cache'))).toBe(false)
})

if (TEST_REDIS_URL) {
  const redisUrl = TEST_REDIS_URL
  /** The state commands' deadline here: short, so a frozen store is seen fast. */
  const COMMAND_TIMEOUT_MS = 500
  /** A request that must not wait for the store at all. */
  const IMMEDIATE_MS = 300
  for (const fault of ['gone', 'frozen'] as const)
    describe(`state Redis ${fault}, rate limits at their defaults`, () => {
      let proxy: FaultProxy
      let state: State
      let db: Db
      let app: ReturnType<typeof createApp>
      const closers: (() => Promise<void> | void)[] = []

      beforeAll(async () => {
        proxy = await startFaultProxy(targetOf(redisUrl))
        const stateUrl = throughProxy(redisUrl, proxy)
        const keyPrefix = `${uniqueName('state-outage')}:`
        state = await openRedisState(stateUrl, {
          retentionMs: 600_000,
          keyPrefix,
          commandTimeoutMs: COMMAND_TIMEOUT_MS,
        })
        db = await embeddedBackend.db()
        // RATE_LIMIT_* unset: the defaults, counted in the state Redis.
        const config = loadConfig({
          LOCAL_MODEL_CHUNK_DELAY_MS: '0',
          RESUME_TOKEN_SECRET: 's',
          REDIS_STATE_URL: stateUrl,
        })
        const rateLimits = await openRateLimits(config, (close) => closers.push(close), {
          breaker: state.breaker,
          keyPrefix,
        })
        expect(rateLimits.sends).toBeDefined()
        expect(rateLimits.requests).toBeDefined()
        const conversations = createConversationService({
          db,
          cache: createMemoryCache(),
          model: openModel(config),
          resumeTokenSecret: 's',
          logs: state.logs,
          leases: state.leases,
          stops: state.stops,
          leaseMs: config.turnLeaseMs,
          maxConversations: 10,
          warn: () => {},
        })
        app = createApp({ config, db, cache: createMemoryCache(), conversations, rateLimits })
      })
      afterAll(async () => {
        proxy.pass()
        await state.close()
        for (const close of closers) await close()
        await proxy.close()
      })

      const send = (user: string) =>
        post(app, '/backend-api/f/conversation', {
          user_id: user,
          messages: [textMessage('is anyone keeping the log?')],
        })

      async function timedSend(user: string) {
        const started = performance.now()
        const response = await send(user)
        return { response, ms: performance.now() - started }
      }

      test('a send answers 503 service_unavailable and stores nothing, the next at once; a read answers; back, sends work', async () => {
        const before = newUser()
        expect((await send(before)).status).toBe(200)
        // Dropped: every connection cut, new ones closed at once, as when Redis
        // has died. Frozen: connections stay open and nothing answers.
        proxy[fault === 'gone' ? 'drop' : 'freeze']()
        try {
          const user = newUser()
          const first = await timedSend(user)
          expect(first.response.status).toBe(503)
          // About one command deadline, never a hang (generous for a busy machine).
          expect(first.ms).toBeLessThan(COMMAND_TIMEOUT_MS + 2_500)
          expect(await first.response.json()).toEqual({
            detail: 'The turn state store is unavailable; try again shortly.',
            code: 'service_unavailable',
          })
          expect(await db.query('SELECT id FROM users WHERE id = $1', [user])).toEqual([])
          // The breaker is open now: the next send is refused without asking Redis.
          const second = await timedSend(user)
          expect(second.response.status).toBe(503)
          expect(second.ms).toBeLessThan(IMMEDIATE_MS)
          // A read needs no state: the requests limit counts in the process meanwhile.
          const started = performance.now()
          const list = await get(app, '/backend-api/conversations', { 'x-user-id': before })
          expect(list.status).toBe(200)
          expect(performance.now() - started).toBeLessThan(IMMEDIATE_MS)
        } finally {
          proxy.pass()
        }
        // Back: the breaker's probe hears Redis and sends run again.
        const user = newUser()
        const deadline = Date.now() + 10_000
        for (;;) {
          const response = await send(user)
          if (response.status === 200) {
            expect(framesOf(await response.text()).at(-1)?.data).toBe('[DONE]')
            break
          }
          expect(response.status).toBe(503)
          await response.arrayBuffer()
          if (Date.now() > deadline) throw new Error('sends did not work again within 10 s')
          await sleep(100)
        }
      }, 30_000)
    })
}
