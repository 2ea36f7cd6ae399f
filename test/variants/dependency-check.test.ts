// APP_VARIANT=dependency-check: really reaches Postgres and Redis; 503 with an
// error string when either is unreachable, without leaking credentials.
import { describe, expect, test } from 'bun:test'
import { variantPlugin } from '../../plugins/variants/index.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db } from '../../src/storage/db.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { createRedisCache } from '../../src/storage/redis-cache.ts'
import { appWith, call, testConfig } from '../docstore/harness.ts'
import { suiteDb } from '../support/backend-apps.ts'
import { appBackends } from '../support/backends.ts'

for (const backend of appBackends())
  describe(backend.name, () => {
    const db = suiteDb(backend)

    const app = (deps: { db: Db; cache: Cache }) =>
      appWith(
        variantPlugin('dependency-check', {
          config: testConfig({ APP_VARIANT: 'dependency-check' }),
          ...deps,
        }),
      )

    async function withUnreachable(run: (deps: { db: Db; cache: Cache }) => Promise<void>) {
      // Port 1 on loopback: nothing listens, so connections are refused at once.
      const deadDb = createPostgresDb('postgres://postgres:pg-s3cret@127.0.0.1:1/x', { max: 1 })
      const deadCache = createRedisCache('redis://:redis-s3cret@127.0.0.1:1')
      try {
        await run({ db: deadDb, cache: deadCache })
      } finally {
        await deadDb.close()
        await deadCache.close()
      }
    }

    describe('dependency-check', () => {
      test('GET / answers a message', async () => {
        const reply = await call(app({ db, cache: backend.cache() }), 'GET', '/')
        expect(reply.status).toBe(200)
        expect(reply.body).toEqual({ message: expect.any(String) })
      })

      test('healthy: postgres ok, redis ok', async () => {
        const reply = await call(app({ db, cache: backend.cache() }), 'GET', '/health')
        expect(reply.status).toBe(200)
        expect(reply.body).toEqual({ status: 'healthy', postgres: 'ok', redis: 'ok' })
      })

      test('Postgres unreachable: 503 unhealthy naming postgres', async () => {
        await withUnreachable(async ({ db: deadDb }) => {
          const started = Date.now()
          const reply = await call<{ status: string; error: string }>(
            app({ db: deadDb, cache: backend.cache() }),
            'GET',
            '/health',
          )
          expect(reply.status).toBe(503)
          expect(reply.body).toEqual({
            status: 'unhealthy',
            error: expect.stringMatching(/^postgres: .+/),
          })
          expect(reply.body.error).not.toContain('redis')
          expect(reply.body.error).not.toContain('s3cret')
          expect(Date.now() - started).toBeLessThan(5_000)
        })
      })

      test('Redis unreachable: 503 unhealthy naming redis', async () => {
        await withUnreachable(async ({ cache: deadCache }) => {
          const reply = await call<{ status: string; error: string }>(
            app({ db, cache: deadCache }),
            'GET',
            '/health',
          )
          expect(reply.status).toBe(503)
          expect(reply.body).toEqual({
            status: 'unhealthy',
            error: expect.stringMatching(/^redis: .+/),
          })
          expect(reply.body.error).not.toContain('s3cret')
        })
      })

      test('both unreachable: one error string naming both', async () => {
        await withUnreachable(async (deps) => {
          const reply = await call<{ status: string; error: string }>(app(deps), 'GET', '/health')
          expect(reply.status).toBe(503)
          // Only the word: no host, port or driver text of the dependencies.
          expect(reply.body.error).toBe('postgres: unreachable; redis: unreachable')
          expect(reply.body.error).not.toContain('s3cret')
        })
      })
    })
  })
