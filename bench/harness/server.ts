// Starts the real service as a child process on a free loopback port, so every
// figure includes the whole HTTP stack, and guarantees it is stopped: on
// stop(), and on the harness's own exit (see children.ts).
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import { resolve } from 'node:path'
import type { Subprocess } from 'bun'
import type { Backend } from './backend.ts'
import { tail, terminate, track } from './children.ts'

const ROOT = resolve(import.meta.dir, '../..')
const HOST = '127.0.0.1'

/** Rate limits that count like the defaults but never refuse a benchmark's load (config maxima). */
export const LIMIT_NEVER_REACHED = { sends: 1_000_000, requests: 10_000_000 } as const

export interface ServerOptions {
  backend: Backend
  /** LOCAL_MODEL_CHUNK_DELAY_MS of this server. */
  chunkDelayMs: number
  /** Instances of one deployment share it (a resume token from one is valid on the other). */
  resumeTokenSecret?: string
  /** Embedded on disk, as the defaults are: DATA_DIR instead of the backend's DATABASE_URL. */
  dataDir?: string
  /** Variables set over the harness's own (a limit turned on, say). */
  env?: Record<string, string>
  /** Run under Bun's CPU profiler, writing `<name>.md` here when the server exits. */
  profile?: { dir: string; name: string }
  startTimeoutMs?: number
}

export interface RunningServer {
  url: string
  pid: number
  /** SIGTERM, then SIGKILL if it has not exited within 10 s. */
  stop(): Promise<void>
}

/**
 * `command` under a shell that first raises the soft limit on open files (to
 * 65,536, else to the hard limit): thousands of streams need a descriptor
 * each, more than a default 1,024. `exec` keeps the child's pid the command's.
 */
export function withFileLimit(command: string[]): string[] {
  return [
    '/bin/sh',
    '-c',
    'ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$@"',
    'sh',
    ...command,
  ]
}

function profileFlags(profile: ServerOptions['profile']): string[] {
  if (!profile) return ['run']
  return [
    '--cpu-prof-md',
    `--cpu-prof-dir=${profile.dir}`,
    `--cpu-prof-name=${profile.name}.md`,
    'run',
  ]
}

/** A port nobody listens on right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, HOST, () => {
      const address = probe.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      probe.close(() => resolvePort(port))
    })
  })
}

async function waitForHealth(
  url: string,
  child: Subprocess,
  timeoutMs: number,
  logs: () => string,
) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`the server exited with ${child.exitCode} before answering:\n${logs()}`)
    const ok = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) })
      .then((response) => response.ok)
      .catch(() => false)
    if (ok) return
    await Bun.sleep(100)
  }
  throw new Error(`the server did not answer /health within ${timeoutMs} ms:\n${logs()}`)
}

export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const port = await freePort()
  // Built from scratch, not inherited: a developer's AUTH_JWT_SECRET, DATA_DIR
  // or MODEL_PROVIDER must not change what is measured.
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/tmp',
    PORT: String(port),
    HOST,
    APP_VARIANT: 'full',
    ...(options.dataDir
      ? { DATA_DIR: options.dataDir }
      : { DATABASE_URL: options.backend.databaseUrl }),
    LOCAL_MODEL_CHUNK_DELAY_MS: String(options.chunkDelayMs),
    RESUME_TOKEN_SECRET: options.resumeTokenSecret ?? randomBytes(32).toString('hex'),
    // Turns of a benchmark are short; a stuck one must not hold up the run.
    SHUTDOWN_GRACE_MS: '5000',
    // The default deployment counts every request and send against its user's
    // limits, so the harness's server counts too, with limits no run reaches
    // (the most the config takes): one reader hammers each route.
    RATE_LIMIT_SENDS: String(LIMIT_NEVER_REACHED.sends),
    RATE_LIMIT_REQUESTS: String(LIMIT_NEVER_REACHED.requests),
  }
  if (options.backend.redisUrl) env.REDIS_URL = options.backend.redisUrl
  // Named even when it is the default, so the harness meters the same database.
  if (options.backend.stateUrl) env.REDIS_STATE_URL = options.backend.stateUrl
  else if (options.backend.redisUrl) env.REDIS_STATE_URL = 'memory://'
  Object.assign(env, options.env)
  const child = track(
    Bun.spawn(withFileLimit([process.execPath, ...profileFlags(options.profile), 'src/index.ts']), {
      cwd: ROOT,
      env,
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    }),
  )
  const out = tail(child.stdout)
  const err = tail(child.stderr)
  const logs = () => `${out()}${err()}`.trim()
  const url = `http://${HOST}:${port}`
  const stop = () => terminate(child, 10_000)
  try {
    await waitForHealth(url, child, options.startTimeoutMs ?? 60_000, logs)
  } catch (error) {
    await stop()
    throw error
  }
  return { url, pid: child.pid, stop }
}
