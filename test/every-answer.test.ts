// What every answer of a real server carries (CONTRACT §3, §19): each error,
// wherever it is made - an unknown route or method, a body that is not JSON,
// a 413 for a declared length, for a chunked body, before routing - has the
// {"detail","code"} body, and every answer of every kind (JSON, errors, an
// SSE stream, the pages, a CORS preflight, /metrics) says
// `X-Content-Type-Options: nosniff`. Over a real port: Bun's own answers
// (its bare 413 once) only show there.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rawExchange } from './support/raw-http.ts'
import { killAllServers, type Server, send, startReadyServer } from './support/server-process.ts'

const WITHIN_MS = 60_000
/** Small, so a length past every route's limit is cheap to declare. */
const IMPORT_MAX_BYTES = 2 * 1024 * 1024

let server: Server
let port: number

beforeAll(async () => {
  server = await startReadyServer({
    DATABASE_URL: 'memory://',
    IMPORT_MAX_BYTES: String(IMPORT_MAX_BYTES),
  })
  port = Number(new URL(server.base).port)
}, WITHIN_MS)
afterAll(killAllServers)

const newUser = () => `answers-${crypto.randomUUID()}`

/** The §3 body: exactly a sentence and a snake_case code. */
async function expectErrorBody(response: Response, status: number, code: string) {
  expect(response.status).toBe(status)
  expect(response.headers.get('content-type')).toStartWith('application/json')
  expect(response.headers.get('x-content-type-options')).toBe('nosniff')
  const body = (await response.json()) as Record<string, unknown>
  expect(Object.keys(body).sort()).toEqual(['code', 'detail'])
  expect(body.code).toBe(code)
  expect(typeof body.detail).toBe('string')
  expect((body.detail as string).length).toBeGreaterThan(0)
}

async function conversationsOf(userId: string): Promise<number> {
  const response = await fetch(`${server.base}/backend-api/conversations?user_id=${userId}`)
  return ((await response.json()) as { total: number }).total
}

const head = (method: string, path: string, headers: Record<string, string>) =>
  `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`

describe('every error answer has the {"detail","code"} body', () => {
  test('an unknown route', async () => {
    await expectErrorBody(await fetch(`${server.base}/no-such-route`), 404, 'not_found')
    await expectErrorBody(
      await fetch(`${server.base}/backend-api/no-such-route`, { method: 'POST' }),
      404,
      'not_found',
    )
  })

  test('a method the route does not take', async () => {
    await expectErrorBody(await fetch(`${server.base}/health`, { method: 'PUT' }), 404, 'not_found')
    await expectErrorBody(
      await fetch(`${server.base}/backend-api/f/conversation`, { method: 'GET' }),
      404,
      'not_found',
    )
  })

  test('a body that is not JSON, storing nothing', async () => {
    const userId = newUser()
    await expectErrorBody(
      await fetch(`${server.base}/backend-api/f/conversation`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: `{"user_id":"${userId}","messages":[`,
      }),
      422,
      'invalid_json',
    )
    expect(await conversationsOf(userId)).toBe(0)
  })

  test('a body over 1 MB, storing nothing', async () => {
    const userId = newUser()
    const response = await send(server.base, userId, 'x'.repeat(1_100_000))
    await expectErrorBody(response, 413, 'payload_too_large')
    expect(response.headers.get('connection')).toBe('close')
    expect(await conversationsOf(userId)).toBe(0)
  })

  test(
    'a declared length over 1 MB, the body never sent: JSON 413 at once, connection closed',
    async () => {
      const exchange = await rawExchange(
        port,
        head('POST', '/documents', {
          'content-type': 'application/json',
          'content-length': String(1024 * 1024 + 1),
        }),
      )
      const answer = await exchange.answered()
      expect(answer.status).toBe(413)
      expect(JSON.parse(answer.body)).toEqual({
        detail: 'The request body is larger than 1 MB.',
        code: 'payload_too_large',
      })
      expect(answer.headers['x-content-type-options']).toBe('nosniff')
      expect(answer.headers.connection).toBe('close')
      await exchange.closed
    },
    WITHIN_MS,
  )

  test(
    'a declared length past every route’s limit, on any path: the JSON 413, not Bun’s bare one',
    async () => {
      // Past IMPORT_MAX_BYTES, the largest body any route takes; and absurdly past it.
      for (const [path, length] of [
        ['/backend-api/conversations/import', IMPORT_MAX_BYTES + 1],
        ['/no-such-route', 10 * 1024 ** 3],
        ['/health', 10 * 1024 ** 3],
      ] as const) {
        const exchange = await rawExchange(
          port,
          head('POST', path, {
            'content-type': 'application/json',
            'content-length': String(length),
          }),
        )
        const answer = await exchange.answered()
        expect({ path, status: answer.status }).toEqual({ path, status: 413 })
        expect(JSON.parse(answer.body)).toEqual({
          detail: `The request body is larger than any request may send (${IMPORT_MAX_BYTES} bytes).`,
          code: 'payload_too_large',
        })
        expect(answer.headers['x-content-type-options']).toBe('nosniff')
        expect(answer.headers.connection).toBe('close')
        await exchange.closed
      }
    },
    WITHIN_MS,
  )

  test(
    'a chunked body that passes 1 MB: JSON 413, connection closed',
    async () => {
      const exchange = await rawExchange(
        port,
        head('POST', '/documents', {
          'content-type': 'application/json',
          'transfer-encoding': 'chunked',
        }),
      )
      // 18 chunks of 64 KiB (1.1 MB) and the end: just past the limit, so the
      // server has read nearly all of it (unread bytes at its close would reset
      // the connection, and the answer with it).
      exchange.write(`${`10000\r\n${'x'.repeat(0x10000)}\r\n`.repeat(18)}0\r\n\r\n`)
      const answer = await exchange.answered()
      expect(answer.status).toBe(413)
      expect(JSON.parse(answer.body)).toEqual({
        detail: 'The request body is larger than 1 MB.',
        code: 'payload_too_large',
      })
      expect(answer.headers.connection).toBe('close')
      await exchange.closed
    },
    WITHIN_MS,
  )
})

describe('every answer says X-Content-Type-Options: nosniff', () => {
  const nosniff = (response: Response) => response.headers.get('x-content-type-options')

  test('JSON answers, the document store’s and the conversation API’s', async () => {
    for (const path of [
      '/health',
      '/',
      '/documents',
      `/backend-api/conversations?user_id=${newUser()}`,
    ]) {
      const response = await fetch(`${server.base}${path}`)
      await response.arrayBuffer()
      expect({ path, status: response.status, nosniff: nosniff(response) }).toEqual({
        path,
        status: 200,
        nosniff: 'nosniff',
      })
    }
  })

  test('an SSE stream', async () => {
    const response = await send(server.base, newUser(), 'hello')
    expect(response.headers.get('content-type')).toStartWith('text/event-stream')
    expect(nosniff(response)).toBe('nosniff')
    expect(await response.text()).toEndWith('data: [DONE]\n\n')
  })

  test('the pages, the OpenAPI document and /metrics', async () => {
    for (const path of ['/docs', '/redoc', '/playground', '/docs/json', '/metrics', '/ready']) {
      const response = await fetch(`${server.base}${path}`)
      await response.arrayBuffer()
      expect({ path, status: response.status, nosniff: nosniff(response) }).toEqual({
        path,
        status: 200,
        nosniff: 'nosniff',
      })
    }
  })

  test('a CORS preflight', async () => {
    const response = await fetch(`${server.base}/backend-api/f/conversation`, {
      method: 'OPTIONS',
      headers: {
        origin: 'http://localhost:5173',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type',
      },
    })
    expect(response.status).toBe(204)
    expect(response.headers.get('access-control-allow-origin')).toBe('*')
    expect(nosniff(response)).toBe('nosniff')
  })
})
