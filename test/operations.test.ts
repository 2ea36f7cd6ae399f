// The entry point as an operator meets it (real processes on loopback,
// embedded storage): the startup line names the pages to open, logs are JSON
// lines on stdout (access lines with request ids, turn lines; LOG_LEVEL
// filters them), /metrics and /ready are wired to the real stores, a port
// another process holds stops a second server at once with one line (no
// SO_REUSEPORT), and HOST=999.1.1.1 stops it with one line naming HOST.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { openUrls } from '../src/startup.ts'
import {
  answers200,
  exitCode,
  killAllServers,
  runToExit,
  type Server,
  send,
  startReadyServer,
} from './support/server-process.ts'

const SPAWN_TEST_TIMEOUT_MS = 30_000

afterAll(killAllServers)

type Line = Record<string, unknown>
/** The complete lines written so far (a line still being written is left out). */
const jsonLines = (text: string): Line[] =>
  text
    .split('\n')
    .slice(0, -1)
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as Line)

/** The first log line that matches, once the server has written it. */
async function lineWhere(server: Server, matches: (line: Line) => boolean): Promise<Line> {
  const text = await server.stdoutUntil((out) => jsonLines(out).some(matches))
  return jsonLines(text).find(matches) as Line
}

describe('a running server', () => {
  let server: Server

  beforeAll(async () => {
    server = await startReadyServer({ DATABASE_URL: 'memory://' })
  }, 60_000)

  test('the startup line names the playground and the docs with a host to click', async () => {
    const line = await lineWhere(server, (entry) => String(entry.msg).startsWith('listening'))
    expect(line.level).toBe('info')
    expect(line.msg).toContain(`${server.base}/playground`)
    expect(line.msg).toContain(`${server.base}/docs`)
    expect(line.url).toBe(server.base)
  })

  test('logs are JSON lines: an access line per request, turn lines, never the text', async () => {
    const secret = `private-${Date.now()}`
    const response = await send(server.base, 'ops-user', `remember ${secret}`)
    const requestId = response.headers.get('x-request-id')
    expect(requestId).toBeTruthy()
    await response.text()
    const access = await lineWhere(
      server,
      (entry) => entry.request_id === requestId && entry.msg === 'request',
    )
    expect(access).toMatchObject({
      msg: 'request',
      method: 'POST',
      route: '/backend-api/f/conversation',
      status: 200,
    })
    const finished = await lineWhere(
      server,
      (entry) => entry.msg === 'turn finished' && entry.user_id === 'ops-user',
    )
    // The turn's lines name the send that started it.
    expect(finished).toMatchObject({ outcome: 'stop', stored: true, request_id: requestId })
    expect(server.stdout()).not.toContain(secret)
  })

  test('/metrics counts cache hits and misses per key kind, the pool and the turns', async () => {
    const response = await send(server.base, 'metrics-user', 'hello')
    const body = await response.text()
    const conversationId = /"conversation_id":"([0-9a-f-]{36})"/.exec(body)?.[1]
    expect(conversationId).toBeDefined()
    for (let i = 0; i < 2; i++) {
      const read = await fetch(`${server.base}/backend-api/conversation/${conversationId}`, {
        headers: { 'x-user-id': 'metrics-user' },
      })
      expect(read.status).toBe(200)
      await read.arrayBuffer()
    }
    const text = await (await fetch(`${server.base}/metrics`)).text()
    const value = (series: string) => {
      const line = text.split('\n').find((entry) => entry.startsWith(`${series} `))
      return line === undefined ? undefined : Number(line.slice(series.length + 1))
    }
    expect(
      value('conduit_cache_lookups_total{kind="conv:history",result="miss"}'),
    ).toBeGreaterThanOrEqual(1)
    expect(
      value('conduit_cache_lookups_total{kind="conv:history",result="hit"}'),
    ).toBeGreaterThanOrEqual(1)
    expect(value('conduit_db_pool_connections{state="size"}')).toBe(1)
    expect(value('conduit_db_pool_connections{state="in_use"}')).toBeGreaterThanOrEqual(0)
    expect(value('conduit_turns_started_total')).toBeGreaterThanOrEqual(1)
    expect(value('conduit_turns_finished_total{outcome="stop"}')).toBeGreaterThanOrEqual(1)
    expect(value('conduit_stream_items_sent_total')).toBeGreaterThan(5)
  })

  test('/ready answers 200 with the database, state and cache checked', async () => {
    const response = await fetch(`${server.base}/ready`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({
      status: 'ready',
      checks: { database: 'ok', state: 'ok', cache: 'ok' },
    })
  })

  test(
    'a second server on the same port exits at once with one line; the first keeps serving',
    async () => {
      const started = Date.now()
      const { code, stderr } = await runToExit({
        DATABASE_URL: 'memory://',
        PORT: server.env.PORT ?? '',
      })
      expect(code).not.toBe(0)
      const message = stderr.trim()
      expect(message.split('\n')).toHaveLength(1)
      expect(message).toContain(`127.0.0.1:${server.env.PORT}`)
      expect(message).toContain('in use')
      // Before opening any store: no waiting for the embedded database to start.
      expect(Date.now() - started).toBeLessThan(5_000)
      expect(server.proc.exitCode).toBeNull()
      // The server holds its port without SO_REUSEPORT: not even a process asking to share gets it.
      expect(() =>
        Bun.serve({
          hostname: '127.0.0.1',
          port: Number(server.env.PORT),
          reusePort: true,
          fetch: () => new Response('intruder'),
        }),
      ).toThrow()
      // Every connection still reaches the first server.
      for (let i = 0; i < 10; i++) expect(await answers200(`${server.base}/health`)).toBe(true)
    },
    SPAWN_TEST_TIMEOUT_MS,
  )
})

describe('startup failures and settings', () => {
  test(
    'HOST=999.1.1.1 exits non-zero with one line naming HOST',
    async () => {
      const { code, stderr } = await runToExit({ HOST: '999.1.1.1' })
      expect(code).not.toBe(0)
      const message = stderr.trim()
      expect(message.split('\n')).toHaveLength(1)
      expect(message).toBe('conduit: HOST must be an IP address or a host name; got "999.1.1.1"')
    },
    SPAWN_TEST_TIMEOUT_MS,
  )

  test(
    'LOG_LEVEL=warn keeps the access lines out',
    async () => {
      const server = await startReadyServer({ DATABASE_URL: 'memory://', LOG_LEVEL: 'warn' })
      const response = await fetch(`${server.base}/backend-api/conversations?user_id=quiet`)
      expect(response.status).toBe(200)
      await response.arrayBuffer()
      server.proc.kill('SIGTERM')
      expect(await exitCode(server.proc)).toBe(0)
      expect(jsonLines(server.stdout()).filter((line) => line.msg === 'request')).toEqual([])
    },
    SPAWN_TEST_TIMEOUT_MS,
  )

  test('the startup URL uses localhost for every interface, brackets for IPv6', () => {
    expect(openUrls({ host: '0.0.0.0', variant: 'full' }, 3000).base).toBe('http://localhost:3000')
    expect(openUrls({ host: '::', variant: 'full' }, 3000).base).toBe('http://localhost:3000')
    expect(openUrls({ host: '::1', variant: 'basic' }, 8080).base).toBe('http://[::1]:8080')
    expect(openUrls({ host: '127.0.0.1', variant: 'basic' }, 1).message).toContain(
      'http://127.0.0.1:1/docs',
    )
  })
})
