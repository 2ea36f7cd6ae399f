// CORS for browser front-ends (CONTRACT §9), through the real app on every
// backend: a preflight answers 204 with the methods in use and the headers
// clients send; CORS_ORIGINS decides which origins are allowed (any by default
// in development mode, none by default with JWT auth); answers of every kind
// (JSON, errors, streams) carry the allowance, and a refused origin gets none.
import { describe, expect, test } from 'bun:test'
import { appBackends } from './support/backends.ts'
import { conversationApp, newUser, textMessage } from './support/conversation-app.ts'

const FRONT_END = 'https://chat.example.com'

function preflight(app: { handle(r: Request): Promise<Response> }, path: string, origin: string) {
  return app.handle(
    new Request(`http://localhost${path}`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': 'PATCH',
        'access-control-request-headers': 'content-type, authorization, x-user-id',
      },
    }),
  )
}

const headerList = (value: string | null) =>
  (value ?? '')
    .split(',')
    .map((part) => part.trim().toLowerCase())
    .filter((part) => part !== '')

for (const backend of appBackends())
  describe(backend.name, () => {
    test('development default: a preflight from any origin is allowed, with the methods and headers in use', async () => {
      const { app } = await conversationApp({ backend })
      for (const path of [
        '/backend-api/conversation/00000000-0000-4000-8000-000000000000',
        '/documents',
      ]) {
        const response = await preflight(app, path, FRONT_END)
        expect(response.status).toBe(204)
        expect(response.headers.get('access-control-allow-origin')).toBe('*')
        expect(headerList(response.headers.get('access-control-allow-methods'))).toEqual(
          expect.arrayContaining(['get', 'post', 'patch', 'delete']),
        )
        expect(headerList(response.headers.get('access-control-allow-headers'))).toEqual(
          expect.arrayContaining(['content-type', 'authorization', 'x-user-id', 'x-conduit-token']),
        )
        expect(await response.text()).toBe('')
      }
    })

    test('development default: a preflight may be cached 10 minutes, and names methods only when asked', async () => {
      const { app } = await conversationApp({ backend })
      const asked = await preflight(app, '/backend-api/conversations', FRONT_END)
      expect(asked.headers.get('access-control-max-age')).toBe('600')
      expect(asked.headers.get('vary')).toBe('*')
      const bare = await app.handle(
        new Request('http://localhost/backend-api/conversations', {
          method: 'OPTIONS',
          headers: { origin: FRONT_END },
        }),
      )
      expect(bare.status).toBe(204)
      expect(bare.headers.get('access-control-allow-origin')).toBe('*')
      expect(bare.headers.get('access-control-max-age')).toBe('600')
      expect(bare.headers.get('access-control-allow-methods')).toBeNull()
      const read = await app.handle(
        new Request('http://localhost/backend-api/models', { headers: { origin: FRONT_END } }),
      )
      expect(read.headers.get('access-control-allow-methods')).toBe(
        'GET, POST, PUT, PATCH, DELETE, OPTIONS',
      )
      expect(read.headers.get('access-control-max-age')).toBeNull()
    })

    test('JSON answers, errors and streams carry the allowance', async () => {
      const { app } = await conversationApp({ backend })
      const user = newUser()
      const origin = { origin: FRONT_END }
      const list = await app.handle(
        new Request('http://localhost/backend-api/conversations', {
          headers: { ...origin, 'x-user-id': user },
        }),
      )
      expect(list.status).toBe(200)
      expect(list.headers.get('access-control-allow-origin')).toBe('*')
      const refused = await app.handle(
        new Request('http://localhost/backend-api/conversations?limit=0', { headers: origin }),
      )
      expect(refused.status).toBe(422)
      expect(refused.headers.get('access-control-allow-origin')).toBe('*')
      const stream = await app.handle(
        new Request('http://localhost/backend-api/f/conversation', {
          method: 'POST',
          headers: { ...origin, 'content-type': 'application/json' },
          body: JSON.stringify({ user_id: user, messages: [textMessage('hello')] }),
        }),
      )
      expect(stream.headers.get('content-type')).toContain('text/event-stream')
      expect(stream.headers.get('access-control-allow-origin')).toBe('*')
      expect(await stream.text()).toEndWith('data: [DONE]\n\n')
    })

    test('CORS_ORIGINS allows the origins listed and refuses any other', async () => {
      const { app } = await conversationApp({
        backend,
        env: { CORS_ORIGINS: `${FRONT_END},http://localhost:5173` },
      })
      const allowed = await preflight(app, '/backend-api/conversations', FRONT_END)
      expect(allowed.status).toBe(204)
      expect(allowed.headers.get('access-control-allow-origin')).toBe(FRONT_END)
      expect(allowed.headers.get('vary')).toContain('Origin')
      const local = await preflight(app, '/backend-api/conversations', 'http://localhost:5173')
      expect(local.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')

      for (const stranger of [
        'https://evil.example',
        'https://chat.example.com.evil.example',
        'http://chat.example.com',
      ]) {
        const refused = await preflight(app, '/backend-api/conversations', stranger)
        expect(refused.headers.get('access-control-allow-origin')).toBeNull()
        const read = await app.handle(
          new Request('http://localhost/backend-api/models', { headers: { origin: stranger } }),
        )
        expect(read.headers.get('access-control-allow-origin')).toBeNull()
      }
    })

    test('with JWT auth no origin is allowed unless CORS_ORIGINS lists it', async () => {
      const closed = await conversationApp({
        backend,
        env: { AUTH_JWT_SECRET: 'cors-secret-of-at-least-32-bytes!' },
      })
      const refused = await preflight(closed.app, '/backend-api/conversations', FRONT_END)
      expect(refused.status).toBe(204)
      expect(refused.headers.get('access-control-allow-origin')).toBeNull()
      const read = await closed.app.handle(
        new Request('http://localhost/backend-api/models', { headers: { origin: FRONT_END } }),
      )
      expect(read.status).toBe(401)
      expect(read.headers.get('access-control-allow-origin')).toBeNull()

      const listed = await conversationApp({
        backend,
        env: { AUTH_JWT_SECRET: 'cors-secret-of-at-least-32-bytes!', CORS_ORIGINS: FRONT_END },
      })
      const allowed = await preflight(listed.app, '/backend-api/conversations', FRONT_END)
      expect(allowed.status).toBe(204)
      expect(allowed.headers.get('access-control-allow-origin')).toBe(FRONT_END)
    })
  })
