// The real entry point as an operator runs it (`bun run src/index.ts`, embedded
// storage, loopback only): it serves, refuses a DATA_DIR another process holds,
// stops on a bad APP_VARIANT or PORT with a one-line message, streams a send,
// and on SIGTERM lets a running turn finish, persists it and exits 0.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { VARIANTS } from '../src/config.ts'

const ROOT = join(import.meta.dir, '..')
const READY_WITHIN_MS = 30_000
const EXIT_WITHIN_MS = 15_000
/** Spawning bun is quick, but not on a machine busy with other test runs. */
const SPAWN_TEST_TIMEOUT_MS = 30_000
const DONE = 'data: [DONE]\n\n'

const children: Subprocess[] = []
const tempDirs: string[] = []

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

function tempDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'conduit-process-'))
  tempDirs.push(dir)
  return dir
}

/** A loopback port nothing listens on: bind port 0, note the port, let it go. */
function freePort(): number {
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const { port } = server
  server.stop(true)
  if (port === undefined) throw new Error('could not find a free port')
  return port
}

/** The environment of a child: embedded storage (no DATABASE_URL / REDIS_URL), loopback. */
function childEnv(overrides: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? tmpdir(),
    HOST: '127.0.0.1',
    PORT: String(freePort()),
    LOCAL_MODEL_CHUNK_DELAY_MS: '0',
    DATA_DIR: tempDataDir(),
    ...overrides,
  }
}

interface Server {
  proc: Subprocess<'ignore', 'ignore', 'pipe'>
  base: string
  dataDir: string
  stderr: () => string
}

/** Starts the entry point and keeps draining its stderr (for failure messages). */
function startServer(overrides: Record<string, string> = {}): Server {
  const env = childEnv(overrides)
  const proc = Bun.spawn([process.execPath, 'run', 'src/index.ts'], {
    cwd: ROOT,
    env,
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: 'pipe',
  })
  children.push(proc)
  let stderr = ''
  void (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of proc.stderr) stderr += decoder.decode(chunk, { stream: true })
  })()
  return {
    proc,
    base: `http://127.0.0.1:${env.PORT}`,
    dataDir: env.DATA_DIR ?? '',
    stderr: () => stderr,
  }
}

async function answers200(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) })
    await response.arrayBuffer()
    return response.status === 200
  } catch {
    return false
  }
}

/** Waits until the server answers GET /health (or, failing that, the conversation list). */
async function waitReady(server: Server): Promise<void> {
  const deadline = Date.now() + READY_WITHIN_MS
  while (Date.now() < deadline) {
    if (server.proc.exitCode !== null)
      throw new Error(`server exited with ${server.proc.exitCode}: ${server.stderr()}`)
    if (await answers200(`${server.base}/health`)) return
    if (await answers200(`${server.base}/backend-api/conversations?user_id=probe`)) return
    await sleep(200)
  }
  throw new Error(`server did not answer within ${READY_WITHIN_MS} ms: ${server.stderr()}`)
}

/** Resolves with the exit code, or throws when the process is still running after ms. */
async function exitCode(proc: Subprocess, ms = EXIT_WITHIN_MS): Promise<number> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`process still running after ${ms} ms`)), ms)
  })
  try {
    return await Promise.race([proc.exited, timeout])
  } finally {
    clearTimeout(timer)
  }
}

/** Runs the entry point to completion: its exit code and everything it wrote to stderr. */
async function runToExit(overrides: Record<string, string>) {
  const proc = Bun.spawn([process.execPath, 'run', 'src/index.ts'], {
    cwd: ROOT,
    env: childEnv(overrides),
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: 'pipe',
  })
  children.push(proc)
  const stderr = new Response(proc.stderr).text()
  const code = await exitCode(proc)
  return { code, stderr: await stderr }
}

function send(base: string, userId: string, text: string): Promise<Response> {
  return fetch(`${base}/backend-api/f/conversation`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      user_id: userId,
      messages: [{ role: 'user', content: { content_type: 'text', parts: [text] } }],
    }),
  })
}

/** The JSON of every `data:` line of an SSE body, `[DONE]` left out. */
function dataItems(body: string): Record<string, unknown>[] {
  return body
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice('data: '.length)) as Record<string, unknown>)
}

/** The text chunks of the append operations in an SSE body, in order. */
function appendedChunks(body: string): string[] {
  const chunks: string[] = []
  for (const item of dataItems(body)) {
    if (item.o !== 'patch' || !Array.isArray(item.v)) continue
    for (const op of item.v as { p?: unknown; o?: unknown; v?: unknown }[])
      if (op.p === '/message/content/parts/0' && op.o === 'append' && typeof op.v === 'string')
        chunks.push(op.v)
  }
  return chunks
}

/** What readUntil needs of a stream reader (Response bodies are typed loosely). */
interface ChunkReader {
  read(): Promise<{ done: boolean; value?: Uint8Array }>
}

/** Reads until done(text) holds for everything read so far, or the stream ends. */
async function readUntil(
  reader: ChunkReader,
  decoder: TextDecoder,
  done: (text: string) => boolean,
): Promise<string> {
  let text = ''
  while (!done(text)) {
    const { value, done: ended } = await reader.read()
    if (ended || value === undefined) break
    text += decoder.decode(value, { stream: true })
  }
  return text
}

afterAll(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  await Promise.all(children.map((child) => child.exited))
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
})

describe('the entry point', () => {
  let server: Server

  beforeAll(async () => {
    server = startServer()
    await waitReady(server)
  }, 60_000)

  test(
    'a second process on the same DATA_DIR exits non-zero, saying it is in use',
    async () => {
      const { code, stderr } = await runToExit({ DATA_DIR: server.dataDir })
      expect(code).not.toBe(0)
      expect(stderr).toContain('DATA_DIR')
      expect(stderr).toContain('in use')
      // The first process is unaffected.
      expect(server.proc.exitCode).toBeNull()
      expect(await answers200(`${server.base}/backend-api/conversations?user_id=probe`)).toBe(true)
    },
    SPAWN_TEST_TIMEOUT_MS,
  )

  test(
    'APP_VARIANT=bogus exits non-zero with one line listing the valid values',
    async () => {
      const { code, stderr } = await runToExit({ APP_VARIANT: 'bogus' })
      expect(code).not.toBe(0)
      const message = stderr.trim()
      expect(message.split('\n')).toHaveLength(1)
      expect(message).toContain('APP_VARIANT')
      for (const variant of VARIANTS) expect(message).toContain(variant)
    },
    SPAWN_TEST_TIMEOUT_MS,
  )

  test(
    'PORT=abc exits non-zero naming PORT',
    async () => {
      const { code, stderr } = await runToExit({ PORT: 'abc' })
      expect(code).not.toBe(0)
      expect(stderr).toContain('PORT')
    },
    SPAWN_TEST_TIMEOUT_MS,
  )

  test(
    'a send streams text/event-stream ending in [DONE]',
    async () => {
      const response = await send(server.base, 'u1', 'hi')
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toStartWith('text/event-stream')
      const body = await response.text()
      expect(body).toStartWith('event: delta_encoding\ndata: "v1"\n\n')
      expect(body).toContain('"type":"message_stream_complete"')
      expect(body).toEndWith(DONE)
      expect(appendedChunks(body).length).toBeGreaterThanOrEqual(2)

      const list = await fetch(`${server.base}/backend-api/conversations?user_id=u1`)
      expect(list.status).toBe(200)
      expect(((await list.json()) as { total: unknown }).total).toBe(1)
    },
    SPAWN_TEST_TIMEOUT_MS,
  )
})

describe('SIGTERM', () => {
  test('a send that is mid-stream completes, the turn is stored, and the exit code is 0', async () => {
    const slow = startServer({ LOCAL_MODEL_CHUNK_DELAY_MS: '50' })
    await waitReady(slow)

    const response = await send(slow.base, 'u-sigterm', 'please tell me a rather long story')
    expect(response.status).toBe(200)
    if (!response.body) throw new Error('the send has no body')
    const reader = response.body.getReader()
    const decoder = new TextDecoder()
    const before = await readUntil(reader, decoder, (text) => text.includes('"o":"append"'))
    expect(before).not.toContain(DONE)

    slow.proc.kill('SIGTERM')
    const after = await readUntil(reader, decoder, () => false)
    const body = before + after

    // The turn was still running when SIGTERM arrived, and finished normally.
    expect(appendedChunks(after).length).toBeGreaterThan(0)
    expect(body).toContain('{"p":"/message/status","o":"replace","v":"finished_successfully"}')
    expect(body).toContain('"type":"message_stream_complete"')
    expect(body).toEndWith(DONE)
    expect(await exitCode(slow.proc)).toBe(0)

    // The whole reply was stored before the process let go of its database.
    const conversationId = dataItems(body).find(
      (item) => item.type === 'resume_conversation_token',
    )?.conversation_id
    expect(typeof conversationId).toBe('string')
    const again = startServer({ DATA_DIR: slow.dataDir })
    await waitReady(again)
    const history = await fetch(
      `${again.base}/backend-api/conversation/${conversationId}?user_id=u-sigterm`,
    )
    expect(history.status).toBe(200)
    const { messages } = (await history.json()) as {
      messages: { role: string; content: { parts: string[] } }[]
    }
    expect(messages.map((message) => message.role)).toEqual(['user', 'assistant'])
    expect(messages[1]?.content.parts.join('')).toBe(appendedChunks(body).join(''))
    again.proc.kill('SIGTERM')
    expect(await exitCode(again.proc)).toBe(0)
  }, 90_000)
})
