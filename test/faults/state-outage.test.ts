// The conversation API with its turn-state Redis gone or frozen (CONTRACT §13
// state: logs, leases): a send or a resume cannot work without it, and answers
// a §3 `503`, not a 500 and not a hang, with nothing stored. The database and
// cache are embedded; the state Redis is reached through a fault proxy that is
// closed (refusing connections) or frozen (connections open, nothing answers).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createConversationService } from '../../src/conversation/service.ts'
import { openModel } from '../../src/dependencies.ts'
import { openRedisState, type State } from '../../src/state/state.ts'
import { isStateUnavailable } from '../../src/state/state-unavailable.ts'
import type { Db } from '../../src/storage/db.ts'
import { createMemoryCache } from '../../src/storage/memory-cache.ts'
import { embeddedBackend, TEST_REDIS_URL, uniqueName } from '../support/backends.ts'
import { newUser, post, textMessage } from '../support/conversation-app.ts'
import { type FaultProxy, startFaultProxy, targetOf } from '../support/fault-proxy.ts'

test('what counts as the state store being unreachable', () => {
  const maxRetries = new Error('Reached the max retries per request limit (which is 1).')
  maxRetries.name = 'MaxRetriesPerRequestError'
  expect(isStateUnavailable(maxRetries)).toBe(true)
  expect(isStateUnavailable(new Error('Connection is closed.'))).toBe(true)
  expect(isStateUnavailable(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe(true)
  expect(isStateUnavailable(new Error('Command timed out'))).toBe(true)
  expect(isStateUnavailable(new Error('WRONGTYPE Operation against a key'))).toBe(false)
  expect(isStateUnavailable({ code: 'ECONNREFUSED' })).toBe(false)
})

if (TEST_REDIS_URL) {
  const redisUrl = TEST_REDIS_URL
  /** The state commands' deadline here: short, so a frozen store is seen fast. */
  const COMMAND_TIMEOUT_MS = 500
  for (const fault of ['gone', 'frozen'] as const)
    describe(`state Redis ${fault}`, () => {
      let proxy: FaultProxy
      let state: State
      let db: Db
      let app: ReturnType<typeof createApp>

      beforeAll(async () => {
        proxy = await startFaultProxy(targetOf(redisUrl))
        const url = new URL(redisUrl)
        url.hostname = '127.0.0.1'
        url.port = String(proxy.port)
        state = await openRedisState(url.toString(), {
          retentionMs: 600_000,
          keyPrefix: `${uniqueName('state-outage')}:`,
          commandTimeoutMs: COMMAND_TIMEOUT_MS,
        })
        db = await embeddedBackend.db()
        const config = loadConfig({ LOCAL_MODEL_CHUNK_DELAY_MS: '0', RESUME_TOKEN_SECRET: 's' })
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
        app = createApp({ config, db, cache: createMemoryCache(), conversations })
        // Closed: connections are refused, as when Redis has died. Frozen:
        // connections stay open and nothing answers, as a SIGSTOPped server.
        if (fault === 'gone') await proxy.close()
        else proxy.freeze()
      })
      afterAll(async () => {
        await state.close()
        if (fault === 'frozen') await proxy.close()
      })

      test('a send answers 503 service_unavailable and stores nothing', async () => {
        const user = newUser()
        const started = performance.now()
        const response = await post(app, '/backend-api/f/conversation', {
          user_id: user,
          messages: [textMessage('is anyone keeping the log?')],
        })
        expect(response.status).toBe(503)
        // About one command deadline, never a hang (generous for a busy machine).
        expect(performance.now() - started).toBeLessThan(COMMAND_TIMEOUT_MS + 2_500)
        expect(await response.json()).toEqual({
          detail: 'The turn state store is unavailable; try again shortly.',
          code: 'service_unavailable',
        })
        expect(await db.query('SELECT id FROM users WHERE id = $1', [user])).toEqual([])
      }, 20_000)
    })
}
