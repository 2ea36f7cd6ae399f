// A request body that has not fully arrived within BODY_TIMEOUT_MS is answered
// 408 with the §3 body and its connection closed (CONTRACT §19), even when its
// bytes keep trickling in (Bun's idle timer restarts with each one); a body
// that comes slowly but in time is served. Over a real port, from a raw
// socket, against the entry point.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type RawExchange, rawExchange } from './support/raw-http.ts'
import { killAllServers, type Server, sleep, startReadyServer } from './support/server-process.ts'

// Small, so a trickle passes it soon; still far above what an in-time body below needs.
const BODY_TIMEOUT_MS = 3_000
/** Long enough for a loaded machine: the test waits for events, never for this. */
const WITHIN_MS = 60_000

let server: Server
let port: number

beforeAll(async () => {
  server = await startReadyServer({
    DATABASE_URL: 'memory://',
    BODY_TIMEOUT_MS: String(BODY_TIMEOUT_MS),
  })
  port = Number(new URL(server.base).port)
}, WITHIN_MS)
afterAll(killAllServers)

const sendBody = (userId: string) =>
  JSON.stringify({
    user_id: userId,
    messages: [{ role: 'user', content: { content_type: 'text', parts: ['slowly'] } }],
  })

const head = (path: string, headers: Record<string, string>) =>
  `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('')}\r\n`

/** Writes one byte of `bytes` at a time, every `everyMs`, until they run out or the connection ends. */
function trickle(exchange: RawExchange, bytes: string, everyMs: number) {
  let sent = 0
  let stop = false
  const done = (async () => {
    while (!stop && sent < bytes.length && exchange.write(bytes[sent] ?? '')) {
      sent++
      await sleep(everyMs)
    }
  })()
  void exchange.closed.then(() => {
    stop = true
  })
  return { sent: () => sent, done }
}

async function conversationsOf(userId: string): Promise<number> {
  const response = await fetch(`${server.base}/backend-api/conversations?user_id=${userId}`)
  return ((await response.json()) as { total: number }).total
}

describe('BODY_TIMEOUT_MS', () => {
  test(
    'a body trickled a byte at a time past the deadline is a 408 with the error body, and the connection is closed',
    async () => {
      const userId = `trickle-${crypto.randomUUID()}`
      const body = sendBody(userId)
      const exchange = await rawExchange(
        port,
        head('/backend-api/f/conversation', {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
        }),
      )
      // One byte every 250 ms: the whole body would take about 30 s, ten times the deadline.
      const sender = trickle(exchange, body, 250)
      const answer = await exchange.answered()
      expect(answer.status).toBe(408)
      expect(JSON.parse(answer.body)).toEqual({
        detail: 'The request body did not arrive in time; send it again, all at once.',
        code: 'request_timeout',
      })
      expect(answer.headers.connection).toBe('close')
      expect(answer.headers['x-content-type-options']).toBe('nosniff')
      // The server ends the connection itself: this resolves on the socket's close.
      await exchange.closed
      await sender.done
      // Bytes kept arriving, so an idle timer would never have fired; the body never ended.
      expect(sender.sent()).toBeGreaterThan(1)
      expect(sender.sent()).toBeLessThan(body.length)
      expect(await conversationsOf(userId)).toBe(0)
    },
    WITHIN_MS,
  )

  test(
    'a chunked body that never ends is a 408 too',
    async () => {
      const exchange = await rawExchange(
        port,
        head('/documents', { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }),
      )
      // A chunk of one byte, again and again: valid framing that never reaches its end.
      let stop = false
      void exchange.closed.then(() => {
        stop = true
      })
      const sending = (async () => {
        while (!stop && exchange.write('1\r\n \r\n')) await sleep(250)
      })()
      const answer = await exchange.answered()
      expect(answer.status).toBe(408)
      expect((JSON.parse(answer.body) as { code: string }).code).toBe('request_timeout')
      expect(answer.headers.connection).toBe('close')
      await exchange.closed
      await sending
    },
    WITHIN_MS,
  )

  test(
    'a body sent slowly in a few pieces but within the deadline is served',
    async () => {
      const userId = `in-time-${crypto.randomUUID()}`
      const body = sendBody(userId)
      const exchange = await rawExchange(
        port,
        head('/backend-api/f/conversation', {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          connection: 'close',
        }),
      )
      const third = Math.ceil(body.length / 3)
      for (const piece of [
        body.slice(0, third),
        body.slice(third, 2 * third),
        body.slice(2 * third),
      ]) {
        exchange.write(piece)
        await sleep(100)
      }
      const text = await exchange.closed
      expect(text).toStartWith('HTTP/1.1 200 ')
      expect(text).toContain('data: [DONE]')
      expect(await conversationsOf(userId)).toBe(1)
    },
    WITHIN_MS,
  )
})
