// Real server processes for tests: the entry point (`bun run src/index.ts`) on
// a free loopback port, with the environment a test gives it, plus what tests
// of processes need: wait until it answers, read its stderr, wait for its exit,
// and an SSE reader that stops at a condition. Every process started here is
// killed after the test file (killAllServers in afterAll).
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'

const ROOT = join(import.meta.dir, '..', '..')
const READY_WITHIN_MS = 30_000
const EXIT_WITHIN_MS = 15_000

const children: Subprocess[] = []
const tempDirs: string[] = []

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

export function tempDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'conduit-process-'))
  tempDirs.push(dir)
  return dir
}

/** A loopback port nothing listens on: bind port 0, note the port, let it go. */
export function freePort(): number {
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const { port } = server
  server.stop(true)
  if (port === undefined) throw new Error('could not find a free port')
  return port
}

/** The environment of a child: embedded storage unless overridden, loopback, no model delay. */
export function childEnv(overrides: Record<string, string>): Record<string, string> {
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

export interface Server {
  proc: Subprocess<'ignore', 'pipe', 'pipe'>
  base: string
  dataDir: string
  env: Record<string, string>
  stderr: () => string
  /** Everything written to stdout so far: the JSON log lines. */
  stdout: () => string
  /** Resolves with stdout so far once done(stdout) holds; rejects after ms or at its end. */
  stdoutUntil: (done: (text: string) => boolean, ms?: number) => Promise<string>
}

/** A child's output stream collected as it comes, so the child never blocks on a full pipe. */
function drain(stream: ReadableStream<Uint8Array>) {
  let text = ''
  let ended = false
  const waiters = new Set<() => void>()
  void (async () => {
    const decoder = new TextDecoder()
    for await (const chunk of stream) {
      text += decoder.decode(chunk, { stream: true })
      for (const waiter of [...waiters]) waiter()
    }
    ended = true
    for (const waiter of [...waiters]) waiter()
  })()
  const until = (done: (text: string) => boolean, ms = 10_000) =>
    new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => settle(new Error(`not seen within ${ms} ms: ${text}`)), ms)
      const settle = (error?: Error) => {
        clearTimeout(timer)
        waiters.delete(check)
        if (error) reject(error)
        else resolve(text)
      }
      const check = () => {
        if (done(text)) settle()
        else if (ended) settle(new Error(`the output ended without it: ${text}`))
      }
      waiters.add(check)
      check()
    })
  return { text: () => text, until }
}

/** Starts the entry point and keeps draining its stderr (failure messages) and stdout (logs). */
export function startServer(overrides: Record<string, string> = {}): Server {
  const env = childEnv(overrides)
  const proc = Bun.spawn([process.execPath, 'run', 'src/index.ts'], {
    cwd: ROOT,
    env,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  })
  children.push(proc)
  const stderr = drain(proc.stderr)
  const stdout = drain(proc.stdout)
  return {
    proc,
    base: `http://127.0.0.1:${env.PORT}`,
    dataDir: env.DATA_DIR ?? '',
    env,
    stderr: stderr.text,
    stdout: stdout.text,
    stdoutUntil: stdout.until,
  }
}

export async function answers200(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(2_000) })
    await response.arrayBuffer()
    return response.status === 200
  } catch {
    return false
  }
}

/** Waits until the server answers GET /health (or, failing that, the conversation list). */
export async function waitReady(server: Server): Promise<void> {
  const deadline = Date.now() + READY_WITHIN_MS
  while (Date.now() < deadline) {
    if (server.proc.exitCode !== null)
      throw new Error(`server exited with ${server.proc.exitCode}: ${server.stderr()}`)
    if (await answers200(`${server.base}/health`)) return
    if (await answers200(`${server.base}/backend-api/conversations?user_id=probe`)) return
    await sleep(100)
  }
  throw new Error(`server did not answer within ${READY_WITHIN_MS} ms: ${server.stderr()}`)
}

/** startServer, resolved once the server answers (waitReady). */
export async function startReadyServer(overrides: Record<string, string> = {}): Promise<Server> {
  const server = startServer(overrides)
  await waitReady(server)
  return server
}

/** Resolves with the exit code, or throws when the process is still running after ms. */
export async function exitCode(proc: Subprocess, ms = EXIT_WITHIN_MS): Promise<number> {
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
export async function runToExit(overrides: Record<string, string>) {
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

/** Kills every process this file started (SIGKILL) and removes their data dirs. */
export async function killAllServers(): Promise<void> {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  await Promise.all(children.map((child) => child.exited))
  for (const dir of tempDirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  children.length = 0
}

/** POST /backend-api/f/conversation with one text message. */
export function send(
  base: string,
  userId: string,
  text: string,
  extra: Record<string, unknown> = {},
): Promise<Response> {
  return fetch(`${base}/backend-api/f/conversation`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      user_id: userId,
      messages: [{ role: 'user', content: { content_type: 'text', parts: [text] } }],
      ...extra,
    }),
  })
}

/** The JSON of every `data:` line of an SSE body, `[DONE]` left out. */
export function dataItems(body: string): Record<string, unknown>[] {
  return body
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice('data: '.length)) as Record<string, unknown>)
}

/** The text chunks of the append operations in an SSE body, in order. */
export function appendedChunks(body: string): string[] {
  const chunks: string[] = []
  for (const item of dataItems(body)) {
    if (item.o !== 'patch' || !Array.isArray(item.v)) continue
    for (const op of item.v as { p?: unknown; o?: unknown; v?: unknown }[])
      if (op.p === '/message/content/parts/0' && op.o === 'append' && typeof op.v === 'string')
        chunks.push(op.v)
  }
  return chunks
}

/** An SSE body being read: everything so far, and a way to read on until a condition holds. */
export interface StreamReading {
  text: () => string
  /** Reads until done(text so far) holds or the stream ends; resolves with the text so far. */
  until: (done: (text: string) => boolean) => Promise<string>
  cancel: () => Promise<void>
}

export function reading(response: Response): StreamReading {
  if (!response.body) throw new Error('the response has no body')
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let ended = false
  return {
    text: () => text,
    async until(done) {
      while (!ended && !done(text)) {
        const { value, done: end } = await reader.read()
        if (end || value === undefined) ended = true
        else text += decoder.decode(value, { stream: true })
      }
      return text
    },
    cancel: () => reader.cancel(),
  }
}
