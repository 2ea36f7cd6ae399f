// GET /ready and GET /metrics of the real application: readiness follows the
// stores (database required, cache reported only) and shutdown; the metrics
// are Prometheus text with the request histogram by route and status, and sit
// behind ADMIN_TOKEN like DELETE /cache when that is set.
import { describe, expect, test } from 'bun:test'
import { createApp } from '../../src/app.ts'
import { loadConfig } from '../../src/config.ts'
import { createReadiness, storeChecks } from '../../src/http/readiness.ts'
import { createMetrics } from '../../src/observability/metrics.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db } from '../../src/storage/db.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import { get, newUser } from '../support/conversation-app.ts'
import { collectingLogger } from '../support/log-lines.ts'

const down = async () => {
  throw new Error('connect ECONNREFUSED postgres://app:hunter2@10.0.0.9:5432/app')
}

describeEachBackend({}, (t) => {
  /** The same application with other stores behind /ready, or another environment. */
  const appWith = (
    options: { db?: Db; cache?: Cache; env?: Record<string, string>; shutDown?: boolean } = {},
  ) => {
    const db = options.db ?? t.db
    const cache = options.cache ?? t.cache
    const readiness = createReadiness(storeChecks({ db, cache }))
    if (options.shutDown) readiness.shutDown()
    return createApp({
      config: loadConfig({ LOCAL_MODEL_CHUNK_DELAY_MS: '0', ...options.env }),
      db,
      cache,
      conversations: t.conversations,
      readiness,
    })
  }

  describe('GET /ready', () => {
    test('200 with every store checked when they answer', async () => {
      const response = await get(t.app, '/ready')
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({
        status: 'ready',
        checks: { database: 'ok', cache: 'ok' },
      })
    })

    test('503 not_ready when the database does not answer, without its URL or password', async () => {
      const response = await get(
        appWith({ db: { ...t.db, kind: t.db.kind, ping: down } }),
        '/ready',
      )
      expect(response.status).toBe(503)
      const body = (await response.json()) as {
        code: string
        detail: string
        checks: Record<string, string>
      }
      expect(body.code).toBe('not_ready')
      expect(body.detail).toContain('store')
      expect(body.checks.database).toBe('unreachable')
      expect(JSON.stringify(body)).not.toContain('hunter2')
      expect(body.checks.cache).toBe('ok')
    })

    test('200 while only the cache is down: it holds copies, the database answers', async () => {
      const response = await get(
        appWith({ cache: { ...t.cache, kind: t.cache.kind, ping: down } }),
        '/ready',
      )
      expect(response.status).toBe(200)
      const body = (await response.json()) as { checks: Record<string, string> }
      expect(body.checks.cache).toBe('unreachable')
    })

    test('503 once shutting down', async () => {
      const response = await get(appWith({ shutDown: true }), '/ready')
      expect(response.status).toBe(503)
      expect(await response.json()).toMatchObject({
        code: 'not_ready',
        detail: 'The service is shutting down.',
      })
    })
  })

  describe('GET /metrics', () => {
    test('Prometheus text with the request histogram by route and status', async () => {
      const metrics = createMetrics()
      const logged = collectingLogger()
      const app = createApp({
        config: t.config,
        db: t.db,
        cache: t.cache,
        conversations: t.conversations,
        metrics,
        log: logged.log,
      })
      await (await get(app, `/backend-api/conversations?user_id=${newUser()}`)).arrayBuffer()
      await (await get(app, '/backend-api/conversations')).arrayBuffer()
      // Both are observed after their responses were handed over, with their access lines.
      await logged.waitFor((line) => line.status === 401)
      const response = await get(app, '/metrics')
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toContain('text/plain')
      const text = await response.text()
      expect(text).toContain(
        'http_request_duration_seconds_count{method="GET",route="/backend-api/conversations",status="200"} 1',
      )
      expect(text).toContain(
        'http_request_duration_seconds_count{method="GET",route="/backend-api/conversations",status="401"} 1',
      )
      for (const name of [
        'conduit_turns_started_total',
        'conduit_turns_finished_total',
        'conduit_active_streams',
        'conduit_stream_items_sent_total',
        'conduit_time_to_first_item_seconds',
        'conduit_model_first_chunk_seconds',
        'conduit_cache_lookups_total',
        'conduit_db_pool_connections',
        'conduit_rate_limited_total',
        'process_resident_memory_bytes',
      ])
        expect(text).toContain(`# TYPE ${name} `)
    })

    test('with ADMIN_TOKEN set: 401 without the token or with a wrong one, 200 with it', async () => {
      const app = appWith({ env: { ADMIN_TOKEN: 'ops-secret-1' } })
      for (const authorization of [
        undefined,
        'Bearer wrong',
        'ops-secret-1',
        `Bearer ${'x'.repeat(10_000)}`,
      ]) {
        const response = await get(app, '/metrics', authorization ? { authorization } : {})
        expect(response.status).toBe(401)
        const body = (await response.json()) as { code: string; detail: string }
        expect(body.code).toBe('unauthorized')
        expect(body.detail).toContain('ADMIN_TOKEN')
        expect(body.detail).not.toContain('ops-secret-1')
      }
      const allowed = await get(app, '/metrics', { authorization: 'Bearer ops-secret-1' })
      expect(allowed.status).toBe(200)
      expect(await allowed.text()).toContain('http_request_duration_seconds')
    })
  })
})
