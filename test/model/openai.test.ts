import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOpenAiModel } from '../../src/conversation/model/openai.ts'
import { ModelError, type ModelRequest } from '../../src/conversation/model/provider.ts'

// A small OpenAI-compatible server on loopback; the first path segment picks
// the scenario, so each test points `baseUrl` at `http://127.0.0.1:<port>/<scenario>`.

const API_KEY = 'sk-test-0123456789-secret'
const encoder = new TextEncoder()

const delta = (content: string, finish: string | null = null) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { content }, finish_reason: finish }],
  })}\n\n`
const roleChunk = `data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] })}\n\n`
const finishChunk = `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\n`
const done = 'data: [DONE]\n\n'

/** The normal reply, sent with mixed line endings, a comment and a multi-byte character. */
const normalStream = [
  ': keep-alive\n\n',
  roleChunk.replace(/\n/g, '\r\n'),
  delta('Héllo'),
  delta(', '),
  delta('wörld 🌍').replace(/\n/g, '\r'),
  delta('!'),
  finishChunk,
  done,
].join('')
const normalReply = 'Héllo, wörld 🌍!'

/** Cuts bytes into pieces of `size`, splitting lines, events and UTF-8 characters. */
function bytePieces(text: string, size: number): Uint8Array[] {
  const bytes = encoder.encode(text)
  const pieces: Uint8Array[] = []
  for (let i = 0; i < bytes.length; i += size) pieces.push(bytes.slice(i, i + size))
  return pieces
}

const cancelled = new Set<string>()

function sse(
  scenario: string,
  pieces: (string | Uint8Array)[],
  { delayMs = 5, close = true } = {},
): Response {
  const stream = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const piece of pieces) {
        controller.enqueue(typeof piece === 'string' ? encoder.encode(piece) : piece)
        await Bun.sleep(delayMs)
      }
      if (close) controller.close()
    },
    cancel() {
      cancelled.add(scenario)
    },
  })
  return new Response(stream, { headers: { 'content-type': 'text/event-stream' } })
}

interface Seen {
  scenario: string
  body: unknown
  authorization: string | null
  accept: string | null
}
const seen: Seen[] = []

async function handle(request: Request): Promise<Response> {
  const [, scenario = '', rest] = new URL(request.url).pathname.split('/')
  if (request.method !== 'POST' || rest !== 'chat')
    return new Response('not found', { status: 404 })
  seen.push({
    scenario,
    body: await request.json(),
    authorization: request.headers.get('authorization'),
    accept: request.headers.get('accept'),
  })
  switch (scenario) {
    case 'ok':
      return sse(scenario, bytePieces(normalStream, 7), { delayMs: 1 })
    case 'slow-events':
      return sse(scenario, [delta('a'), delta('b'), delta('c'), finishChunk, done], { delayMs: 60 })
    case 'unauthorized':
      return Response.json(
        {
          error: {
            message: `Incorrect API key provided: ${API_KEY}. You can find your API key at https://platform.openai.com/account/api-keys.`,
            type: 'invalid_request_error',
            code: 'invalid_api_key',
          },
        },
        { status: 401 },
      )
    case 'server-error':
      return Response.json(
        { error: { message: `The server had an error. ${'x'.repeat(400)}`, type: 'server_error' } },
        { status: 500 },
      )
    case 'html-error':
      return new Response('<html><body>Bad gateway</body></html>', { status: 502 })
    case 'mid-error':
      return sse(scenario, [
        delta('Hel'),
        delta('lo'),
        `data: ${JSON.stringify({ error: { message: 'The upstream model is overloaded.' } })}\n\n`,
      ])
    case 'stall':
      return sse(scenario, [delta('Hel'), delta('lo')], { close: false })
    case 'slow-headers':
      await Bun.sleep(1500)
      return sse(scenario, [delta('late'), finishChunk, done])
    case 'cut':
      return sse(scenario, [delta('Hel'), delta('lo')])
    case 'malformed':
      return sse(scenario, [delta('Hel'), 'data: {"choices": [\n\n', done])
    case 'finish-without-done':
      return sse(scenario, [delta('Hel'), delta('lo', 'stop')])
    case 'done-without-blank-line':
      return sse(scenario, [delta('Hel'), delta('lo'), 'data: [DONE]'])
    default:
      return new Response('unknown scenario', { status: 404 })
  }
}

let server: ReturnType<typeof Bun.serve>
beforeAll(() => {
  server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: handle })
})
afterAll(() => {
  server.stop(true)
})

function model(scenario: string, options: { timeoutMs?: number; apiKey?: string } = {}) {
  return createOpenAiModel({
    slug: 'gpt-test',
    baseUrl: `http://127.0.0.1:${server.port}/${scenario}`,
    apiKey: options.apiKey,
    timeoutMs: options.timeoutMs ?? 5000,
  })
}

const request: ModelRequest = {
  messages: [
    { role: 'user', content: 'Hi' },
    { role: 'assistant', content: 'Hello!' },
    { role: 'user', content: 'Say hello to the world' },
  ],
  temperature: 0.7,
}

/** Runs a stream to its end; returns what it yielded and what it threw. */
async function run(stream: AsyncIterable<string>): Promise<{ chunks: string[]; error: unknown }> {
  const chunks: string[] = []
  try {
    for await (const chunk of stream) chunks.push(chunk)
    return { chunks, error: undefined }
  } catch (error) {
    return { chunks, error }
  }
}

function detailOf(error: unknown): string {
  expect(error).toBeInstanceOf(ModelError)
  return error instanceof ModelError ? error.detail : ''
}

describe('createOpenAiModel', () => {
  test('streams a reply sent in pieces that split lines, events and characters', async () => {
    const { chunks, error } = await run(model('ok', { apiKey: API_KEY }).stream(request))
    expect(error).toBeUndefined()
    expect(chunks).toEqual(['Héllo', ', ', 'wörld 🌍', '!'])
    expect(chunks.join('')).toBe(normalReply)
  })

  test('the pieces reach the parser as separate reads (through an injected fetch)', async () => {
    let reads = 0
    const counting = (async (input: string | URL | Request, init?: RequestInit) => {
      const response = await fetch(input, init)
      const counter = new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          reads++
          controller.enqueue(chunk)
        },
      })
      return new Response(response.body?.pipeThrough(counter), response)
    }) as typeof fetch
    const injected = createOpenAiModel({
      slug: 'gpt-test',
      baseUrl: `http://127.0.0.1:${server.port}/ok`,
      timeoutMs: 5000,
      fetch: counting,
    })
    const { chunks, error } = await run(injected.stream(request))
    expect(error).toBeUndefined()
    expect(chunks.join('')).toBe(normalReply)
    expect(reads).toBeGreaterThan(10)
  })

  test('sends the model, the messages, stream: true, temperature and the key', async () => {
    await run(model('ok', { apiKey: API_KEY }).stream(request))
    const last = seen.at(-1)
    expect(last?.scenario).toBe('ok')
    expect(last?.body).toEqual({
      model: 'gpt-test',
      messages: request.messages,
      stream: true,
      temperature: 0.7,
    })
    expect(last?.authorization).toBe(`Bearer ${API_KEY}`)
    expect(last?.accept).toBe('text/event-stream')
  })

  test('sends no temperature and no Authorization when they are not set', async () => {
    await run(model('ok').stream({ messages: [{ role: 'user', content: 'Hi' }] }))
    const last = seen.at(-1)
    expect(last?.body).toEqual({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'Hi' }],
      stream: true,
    })
    expect(last?.authorization).toBeNull()
  })

  test('reports its slug', () => {
    expect(model('ok').slug).toBe('gpt-test')
  })

  test('401: the status and the upstream message, without the key', async () => {
    const { chunks, error } = await run(model('unauthorized', { apiKey: API_KEY }).stream(request))
    expect(chunks).toEqual([])
    const detail = detailOf(error)
    expect(detail).toContain('401')
    expect(detail).toContain('Incorrect API key provided')
    expect(detail).not.toContain(API_KEY)
  })

  test('500: the upstream message is cut to 200 characters', async () => {
    const { error } = await run(model('server-error').stream(request))
    const detail = detailOf(error)
    expect(detail).toContain('500')
    expect(detail).toContain('The server had an error.')
    expect(detail.endsWith('…')).toBe(true)
    const upstream = detail.slice(detail.indexOf('The server had'), -1)
    expect(upstream.length).toBe(200)
  })

  test('a non-JSON error body: the status alone', async () => {
    const { error } = await run(model('html-error').stream(request))
    expect(detailOf(error)).toBe('The model server answered with status 502.')
  })

  test('an error event mid-stream, after the chunks before it', async () => {
    const { chunks, error } = await run(model('mid-error').stream(request))
    expect(chunks).toEqual(['Hel', 'lo'])
    expect(detailOf(error)).toContain('The upstream model is overloaded.')
  })

  test('a stall times out after the chunks before it', async () => {
    const started = performance.now()
    const { chunks, error } = await run(model('stall', { timeoutMs: 200 }).stream(request))
    expect(chunks).toEqual(['Hel', 'lo'])
    expect(detailOf(error)).toBe('The model did not answer within 0.2 s.')
    expect(performance.now() - started).toBeLessThan(2000)
  })

  test('no response headers within the timeout', async () => {
    const started = performance.now()
    const { chunks, error } = await run(model('slow-headers', { timeoutMs: 200 }).stream(request))
    expect(chunks).toEqual([])
    expect(detailOf(error)).toBe('The model did not answer within 0.2 s.')
    expect(performance.now() - started).toBeLessThan(1000)
  })

  test('a slow consumer does not count against the timeout', async () => {
    const chunks: string[] = []
    for await (const chunk of model('slow-events', { timeoutMs: 200 }).stream(request)) {
      chunks.push(chunk)
      await Bun.sleep(250)
    }
    expect(chunks).toEqual(['a', 'b', 'c'])
  })

  test('the connection closing without [DONE] or a finish_reason', async () => {
    const { chunks, error } = await run(model('cut').stream(request))
    expect(chunks).toEqual(['Hel', 'lo'])
    expect(detailOf(error)).toBe(
      'The model server closed the stream before the reply was complete.',
    )
  })

  test('a finish_reason without [DONE] is a complete reply', async () => {
    const { chunks, error } = await run(model('finish-without-done').stream(request))
    expect(error).toBeUndefined()
    expect(chunks).toEqual(['Hel', 'lo'])
  })

  test('[DONE] without the final blank line is a complete reply', async () => {
    const { chunks, error } = await run(model('done-without-blank-line').stream(request))
    expect(error).toBeUndefined()
    expect(chunks).toEqual(['Hel', 'lo'])
  })

  test('malformed JSON in a data line', async () => {
    const { chunks, error } = await run(model('malformed').stream(request))
    expect(chunks).toEqual(['Hel'])
    expect(detailOf(error)).toBe('The model server sent data that could not be read.')
  })

  test('a server that cannot be reached', async () => {
    const closed = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
    const port = closed.port
    closed.stop(true)
    const unreachable = createOpenAiModel({
      slug: 'gpt-test',
      baseUrl: `http://127.0.0.1:${port}/v1`,
      apiKey: API_KEY,
      timeoutMs: 5000,
    })
    const { error } = await run(unreachable.stream(request))
    expect(detailOf(error)).toBe('The model server could not be reached.')
  })

  test('an aborted signal stops the stream and the upstream request', async () => {
    cancelled.delete('stall')
    const controller = new AbortController()
    const started = performance.now()
    const chunks: string[] = []
    let caught: unknown
    try {
      for await (const chunk of model('stall').stream({ ...request, signal: controller.signal })) {
        chunks.push(chunk)
        if (chunks.length === 2) setTimeout(() => controller.abort(), 20)
      }
    } catch (error) {
      caught = error
    }
    expect(chunks).toEqual(['Hel', 'lo'])
    expect(detailOf(caught)).toBe('The reply was cancelled.')
    expect(performance.now() - started).toBeLessThan(2000)
    for (let i = 0; i < 50 && !cancelled.has('stall'); i++) await Bun.sleep(10)
    expect(cancelled.has('stall')).toBe(true)
  })

  test('a signal aborted before the start sends nothing', async () => {
    const before = seen.length
    const { error } = await run(model('ok').stream({ ...request, signal: AbortSignal.abort() }))
    expect(detailOf(error)).toBe('The reply was cancelled.')
    await Bun.sleep(20)
    expect(seen.length).toBe(before)
  })

  test('a consumer that stops early closes the upstream request', async () => {
    cancelled.delete('stall')
    for await (const chunk of model('stall').stream(request)) {
      expect(chunk).toBe('Hel')
      break
    }
    for (let i = 0; i < 50 && !cancelled.has('stall'); i++) await Bun.sleep(10)
    expect(cancelled.has('stall')).toBe(true)
  })
})
