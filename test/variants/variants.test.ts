// The five example variants (spec "Minimal example endpoints", CONTRACT §7):
// every field and default, through the one selector.
import { describe, expect, test } from 'bun:test'
import { hostname } from 'node:os'
import { COUNTER_KEY } from '../../plugins/variants/counter.ts'
import { type ExampleVariant, variantPlugin } from '../../plugins/variants/index.ts'
import type { Cache } from '../../src/storage/cache.ts'
import { createRedisCache } from '../../src/storage/redis-cache.ts'
import { appWith, call, type ErrorReply, testConfig } from '../docstore/harness.ts'
import { appBackends } from '../support/backends.ts'

const variantApp = (
  variant: ExampleVariant,
  env: Record<string, string> = {},
  cache: Cache | undefined = undefined,
) =>
  appWith(
    variantPlugin(variant, {
      config: testConfig({ ...env, APP_VARIANT: variant }),
      cache,
      // The counter keeps its count in the state store, which the same port serves.
      counters: cache,
    }),
  )

describe('basic', () => {
  test('GET / answers message, hostname, environment (default development)', async () => {
    const reply = await call(variantApp('basic'), 'GET', '/')
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      message: expect.any(String),
      hostname: hostname(),
      environment: 'development',
    })
  })

  test('environment is APP_ENV', async () => {
    const reply = await call(variantApp('basic', { APP_ENV: 'staging' }), 'GET', '/')
    expect(reply.body.environment).toBe('staging')
  })

  test('GET /health is healthy', async () => {
    const reply = await call(variantApp('basic'), 'GET', '/health')
    expect(reply).toMatchObject({ status: 200, body: { status: 'healthy' } })
    expect(Object.keys(reply.body)).toEqual(['status'])
  })
})

describe('configuration', () => {
  test('defaults: production, "false" everywhere, database not configured', async () => {
    const reply = await call(variantApp('configuration'), 'GET', '/')
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      environment: 'production',
      debug: 'false',
      database: 'not configured',
      features: { hot_reload: 'false', debug_toolbar: 'false' },
    })
  })

  test('reads the variables as strings and masks the database password', async () => {
    const app = variantApp('configuration', {
      APP_ENV: 'development',
      DEBUG: 'true',
      HOT_RELOAD: 'true',
      DEBUG_TOOLBAR: '1',
      DATABASE_URL: 'postgres://app:pa55word@db.internal:5432/conduit',
    })
    const reply = await call(app, 'GET', '/')
    expect(reply.body).toEqual({
      environment: 'development',
      debug: 'true',
      database: 'postgres://app:***@db.internal:5432/conduit',
      features: { hot_reload: 'true', debug_toolbar: '1' },
    })
    expect(JSON.stringify(reply.body)).not.toContain('pa55word')
  })

  test('a URL without a password is shown as it is', async () => {
    const reply = await call(
      variantApp('configuration', { DATABASE_URL: 'postgres://app@db:5432/conduit' }),
      'GET',
      '/',
    )
    expect(reply.body.database).toBe('postgres://app@db:5432/conduit')
  })

  test('GET /health is healthy', async () => {
    expect((await call(variantApp('configuration'), 'GET', '/health')).body).toEqual({
      status: 'healthy',
    })
  })
})

describe('instance', () => {
  test('counts calls to / per instance, starting at 1', async () => {
    const app = variantApp('instance')
    const first = await call(app, 'GET', '/')
    expect(first.body).toEqual({ instance: hostname(), requests_handled: 1 })
    await call(app, 'GET', '/health')
    const second = await call(app, 'GET', '/')
    expect(second.body.requests_handled).toBe(2)
    // Another process (another plugin instance) counts on its own.
    expect((await call(variantApp('instance'), 'GET', '/')).body.requests_handled).toBe(1)
  })

  test('GET /health is healthy with the instance name', async () => {
    expect((await call(variantApp('instance'), 'GET', '/health')).body).toEqual({
      status: 'healthy',
      instance: hostname(),
    })
  })
})

// The cache the count lives in: in-process, and real Redis when available.
for (const backend of appBackends())
  describe(backend.name, () => {
    describe('counter', () => {
      test('counts visits in the cache under counter:visits; POST /reset sets 0', async () => {
        const cache = backend.cache()
        const app = variantApp('counter', {}, cache)
        const first = await call(app, 'GET', '/')
        expect(first.body).toEqual({ message: expect.any(String), visits: 1 })
        expect((await call(app, 'GET', '/')).body.visits).toBe(2)
        expect(await cache.get(COUNTER_KEY)).toBe('2')

        // The count lives in the cache, not in the process: a new app continues it.
        expect((await call(variantApp('counter', {}, cache), 'GET', '/')).body.visits).toBe(3)

        const reset = await call(app, 'POST', '/reset')
        expect(reset.status).toBe(200)
        expect(reset.body).toEqual({ message: expect.any(String), visits: 0 })
        expect(await cache.get(COUNTER_KEY)).toBe('0')
        expect((await call(app, 'GET', '/')).body.visits).toBe(1)
      })

      test('GET /health: healthy with redis connected', async () => {
        const reply = await call(variantApp('counter', {}, backend.cache()), 'GET', '/health')
        expect(reply).toMatchObject({
          status: 200,
          body: { status: 'healthy', redis: 'connected' },
        })
      })
    })
  })

describe('counter', () => {
  test('with the cache unreachable: /health 503 unhealthy, / and /reset 503 errors', async () => {
    const dead = createRedisCache('redis://127.0.0.1:1')
    try {
      const app = variantApp('counter', {}, dead)
      const health = await call(app, 'GET', '/health')
      expect(health.status).toBe(503)
      expect(health.body).toEqual({ status: 'unhealthy', redis: 'disconnected' })
      for (const [method, path] of [
        ['GET', '/'],
        ['POST', '/reset'],
      ] as const) {
        const reply = await call<ErrorReply>(app, method, path)
        expect(reply.status).toBe(503)
        expect(reply.body.code).toBe('service_unavailable')
      }
    } finally {
      await dead.close()
    }
  }, 20_000)
})

describe('a variant serves only its own routes', () => {
  test.each(['basic', 'configuration', 'instance'] as const)(
    '%s has no document store',
    async (variant) => {
      const app = variantApp(variant)
      expect((await call(app, 'GET', '/documents')).status).toBe(404)
      expect((await call(app, 'POST', '/query', { json: { question: 'x' } })).status).toBe(404)
      expect((await call(app, 'POST', '/reset')).status).toBe(404)
    },
  )

  test('the selector refuses a variant without the dependency it needs', () => {
    expect(() => variantPlugin('counter', { config: testConfig() })).toThrow(
      /needs a counter store/,
    )
    expect(() => variantPlugin('dependency-check', { config: testConfig() })).toThrow(
      /needs a database/,
    )
  })
})

describe('APP_VARIANT', () => {
  test('an unknown name is refused at startup with the valid values', () => {
    expect(() => testConfig({ APP_VARIANT: 'bogus' })).toThrow(
      /APP_VARIANT.*full, basic, counter, configuration, instance, dependency-check/,
    )
  })
})
