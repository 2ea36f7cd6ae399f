// Headers hooks set reach a route's own Response: built in by textResponse,
// folded in by the hook for any other Response (a stream included) - the very
// Response the route returned goes out, not a copy rebuilt from its body -
// kept when the route set the header itself, and left to Elysia's own merge
// when the Response's headers cannot change or a hook set another status.
import { expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { responseHeaders, textResponse } from '../src/http/response-headers.ts'

function appWith(route: (set: { headers: Record<string, string | number> }) => unknown) {
  return new Elysia()
    .onRequest(({ set }) => {
      set.headers['x-request-id'] = 'req-1'
      set.headers['access-control-allow-origin'] = '*'
    })
    .use(responseHeaders)
    .get('/', ({ set }) => route(set))
}

const call = (app: ReturnType<typeof appWith>) => app.handle(new Request('http://localhost/'))

test('textResponse builds the hooks’ headers into the Response', async () => {
  const response = await call(appWith((set) => textResponse(set, '{"a":1}', 'application/json')))
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toBe('application/json')
  expect(response.headers.get('x-request-id')).toBe('req-1')
  expect(response.headers.get('access-control-allow-origin')).toBe('*')
  expect(await response.text()).toBe('{"a":1}')
})

test('any other Response gets them folded in, a stream as well, byte for byte', async () => {
  const stream = () =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode('data: 1\n\n'))
          controller.enqueue(new TextEncoder().encode('data: [DONE]\n\n'))
          controller.close()
        },
      }),
      { headers: { 'content-type': 'text/event-stream' } },
    )
  let returned: Response | undefined
  const response = await call(
    appWith(() => {
      returned = stream()
      return returned
    }),
  )
  // Not rebuilt: without the hook Elysia answers with a new Response made from this one's body.
  expect(response).toBe(returned as Response)
  expect(response.headers.get('x-request-id')).toBe('req-1')
  expect(response.headers.get('content-type')).toBe('text/event-stream')
  expect(await response.text()).toBe('data: 1\n\ndata: [DONE]\n\n')
})

test('a header the route set itself is kept', async () => {
  const response = await call(
    appWith(
      () => new Response('x', { headers: { 'access-control-allow-origin': 'https://a.example' } }),
    ),
  )
  expect(response.headers.get('access-control-allow-origin')).toBe('https://a.example')
  expect(response.headers.get('x-request-id')).toBe('req-1')
})

test('a status set by a hook, or headers that cannot change, are left to Elysia’s merge', async () => {
  const withStatus = new Elysia()
    .onRequest(({ set }) => {
      set.headers['x-request-id'] = 'req-2'
      set.status = 202
    })
    .use(responseHeaders)
    .get('/', () => new Response('accepted'))
  const accepted = await withStatus.handle(new Request('http://localhost/'))
  expect(accepted.status).toBe(202)
  expect(accepted.headers.get('x-request-id')).toBe('req-2')

  // Response.error() has immutable headers: setting one throws, and Elysia merges instead.
  const immutable = await call(appWith(() => Response.error()))
  expect(immutable.headers.get('x-request-id')).toBe('req-1')
})
