// GET / and GET /health of the document store: real checks, 503 only when the
// database is down, no secrets in the message (CONTRACT §6).
import { describe, expect, test } from 'bun:test'
import { safeErrorMessage } from '../../src/http/dependency-probe.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db } from '../../src/storage/db.ts'
import { createMemoryCache } from '../../src/storage/memory-cache.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { createRedisCache } from '../../src/storage/redis-cache.ts'
import { suiteDb } from '../support/backend-apps.ts'
import { appBackends } from '../support/backends.ts'
import { call, docstoreApp } from './harness.ts'

interface HealthBody {
  api: string
  postgres: string
  redis: string
  database: string
  cache: string
}

/** A Db whose every call fails with the given error. */
function brokenDb(message: string): Db {
  const fail = async (): Promise<never> => {
    throw new Error(message)
  }
  return {
    kind: 'postgres',
    query: fail,
    exec: fail,
    transaction: fail,
    ping: fail,
    close: async () => {},
  }
}

for (const backend of appBackends())
  describe(backend.name, () => {
    const db = suiteDb(backend)

    describe('GET /', () => {
      test('names the service', async () => {
        const reply = await call(docstoreApp({ db, cache: backend.cache() }), 'GET', '/')
        expect(reply.status).toBe(200)
        expect(reply.body).toEqual({ service: 'conduit', status: 'running' })
      })
    })

    describe('GET /health', () => {
      test('healthy: both dependencies connected, and which kinds they are', async () => {
        const cache = backend.cache()
        const reply = await call<HealthBody>(docstoreApp({ db, cache }), 'GET', '/health')
        expect(reply.status).toBe(200)
        expect(reply.body).toEqual({
          api: 'healthy',
          postgres: 'connected',
          redis: 'connected',
          database: backend.name === 'real' ? 'postgres' : 'embedded',
          cache: backend.name === 'real' ? 'redis' : 'memory',
        })
      })

      test('database unreachable: 503 with a short error', async () => {
        const unreachable = createPostgresDb('postgres://postgres:pg-s3cret@127.0.0.1:1/nothing', {
          max: 1,
        })
        try {
          const reply = await call<HealthBody>(
            docstoreApp({ db: unreachable, cache: createMemoryCache() }),
            'GET',
            '/health',
          )
          expect(reply.status).toBe(503)
          expect(reply.body.api).toBe('healthy')
          expect(reply.body.postgres).toBe('error: unreachable')
          expect(reply.body.redis).toBe('connected')
          expect(JSON.stringify(reply.body)).not.toContain('pg-s3cret')
        } finally {
          await unreachable.close()
        }
      })

      test('a failure never publishes the driver text, hosts or ports', async () => {
        const reply = await call<HealthBody>(
          docstoreApp({
            db: brokenDb(
              'could not reach postgres://admin:hunter2@db.internal:5432/app\n  at line 2',
            ),
            cache: createMemoryCache(),
          }),
          'GET',
          '/health',
        )
        expect(reply.status).toBe(503)
        expect(reply.body.postgres).toBe('error: unreachable')
        expect(JSON.stringify(reply.body)).not.toMatch(/db\.internal|5432|hunter2/)
      })

      test('cache unreachable: still 200, redis disconnected', async () => {
        const deadCache: Cache = createRedisCache('redis://127.0.0.1:1')
        try {
          const started = Date.now()
          const reply = await call<HealthBody>(
            docstoreApp({ db, cache: deadCache }),
            'GET',
            '/health',
          )
          expect(reply.status).toBe(200)
          expect(reply.body.postgres).toBe('connected')
          expect(reply.body.redis).toBe('disconnected')
          expect(reply.body.cache).toBe('redis')
          expect(Date.now() - started).toBeLessThan(5_000)
        } finally {
          await deadCache.close()
        }
      })
    })
  })

describe('safeErrorMessage', () => {
  test('cuts URLs and passwords, keeps one short line', () => {
    expect(safeErrorMessage(new Error('bad redis://:pw@host:6379/0 here'))).toBe('bad <url> here')
    expect(safeErrorMessage(new Error('auth failed password=abc123 x'))).toBe(
      'auth failed password=*** x',
    )
    expect(safeErrorMessage(new Error('x'.repeat(500))).length).toBeLessThanOrEqual(160)
    expect(safeErrorMessage('')).toBe('unknown error')
  })
})
