// DELETE /cache and who may call it (CONTRACT §6).
import { describe, expect, test } from 'bun:test'
import { suiteDb } from '../support/backend-apps.ts'
import { appBackends } from '../support/backends.ts'
import { call, docstoreApp, type ErrorReply, testConfig } from './harness.ts'

for (const backend of appBackends())
  describe(backend.name, () => {
    const db = suiteDb(backend)

    async function setup(env: Record<string, string>) {
      const cache = backend.cache()
      await cache.set('some:key', 'value')
      await cache.set('documents:list', '[]', 60)
      return { cache, app: docstoreApp({ db, cache, config: testConfig(env) }) }
    }

    const stillThere = async (cache: { get: (key: string) => Promise<string | null> }) =>
      expect(await cache.get('some:key')).toBe('value')

    describe('DELETE /cache', () => {
      test('in development without ADMIN_TOKEN, flushes every key', async () => {
        const { app, cache } = await setup({})
        const reply = await call<{ message: string }>(app, 'DELETE', '/cache')
        expect(reply.status).toBe(200)
        expect(Object.keys(reply.body)).toEqual(['message'])
        expect(await cache.get('some:key')).toBeNull()
        expect(await cache.get('documents:list')).toBeNull()
      })

      test('with ADMIN_TOKEN, needs that bearer token', async () => {
        const { app, cache } = await setup({ ADMIN_TOKEN: 's3cret-admin' })
        const attempts: Record<string, string>[] = [
          {},
          { authorization: 'Bearer wrong' },
          { authorization: 's3cret-admin' },
          { authorization: 'Basic s3cret-admin' },
          { authorization: 'Bearer s3cret-admin-and-more' },
        ]
        for (const headers of attempts) {
          const reply = await call<ErrorReply>(app, 'DELETE', '/cache', { headers })
          expect(reply.status).toBe(401)
          expect(reply.body.code).toBe('unauthorized')
          expect(JSON.stringify(reply.body)).not.toContain('s3cret-admin')
          await stillThere(cache)
        }
        const ok = await call(app, 'DELETE', '/cache', {
          headers: { authorization: 'Bearer s3cret-admin' },
        })
        expect(ok.status).toBe(200)
        expect(await cache.get('some:key')).toBeNull()
      })

      test('in production without ADMIN_TOKEN, is refused with 403', async () => {
        const { app, cache } = await setup({ APP_ENV: 'production' })
        const reply = await call<ErrorReply>(app, 'DELETE', '/cache', {
          headers: { authorization: 'Bearer anything' },
        })
        expect(reply.status).toBe(403)
        expect(reply.body.code).toBe('forbidden')
        await stillThere(cache)
      })

      test('in production with ADMIN_TOKEN, works with the token', async () => {
        const { app, cache } = await setup({ APP_ENV: 'production', ADMIN_TOKEN: 'prod-token' })
        expect((await call(app, 'DELETE', '/cache')).status).toBe(401)
        await stillThere(cache)
        const ok = await call(app, 'DELETE', '/cache', {
          headers: { authorization: 'bearer prod-token' },
        })
        expect(ok.status).toBe(200)
      })
    })
  })
