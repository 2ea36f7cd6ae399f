// APP_VARIANT=counter as an operator runs it: the count lives in the Redis
// state (REDIS_URL's database, under the state prefix), so it survives a
// restart of the process and a flush of the cache. Needs TEST_REDIS_URL; uses
// Redis logical databases of its own (the service's own prefixes, no test
// prefix).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { DEFAULT_CACHE_PREFIX } from '../../src/storage/keyspace.ts'
import { createRedisCache } from '../../src/storage/redis-cache.ts'
import { TEST_REDIS_URL } from '../support/backends.ts'

const ROOT = join(import.meta.dir, '..', '..')
const ENTRY = join(ROOT, 'src', 'index.ts')
/** Logical databases the other tests never use (9, and 10 as it once was); flushed before and after. */
const COUNTER_DB = 9

const skipReason = !TEST_REDIS_URL
  ? 'set TEST_REDIS_URL to run it against real Redis'
  : !existsSync(ENTRY)
    ? 'src/index.ts does not exist yet'
    : undefined
if (skipReason) console.log(`counter-restart.test.ts skipped: ${skipReason}`)

function counterRedisUrl(database = COUNTER_DB): string {
  const url = new URL(TEST_REDIS_URL as string)
  url.pathname = `/${database}`
  return url.toString()
}

/** A loopback port nothing listens on: bind port 0, note the port, let it go. */
function freePort(): number {
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response() })
  const port = server.port
  server.stop(true)
  if (port === undefined) throw new Error('no free port')
  return port
}

interface Running {
  proc: Subprocess<'ignore', 'ignore', 'pipe'>
  base: string
}

async function start(dataDir: string): Promise<Running> {
  const port = freePort()
  const proc = Bun.spawn([process.execPath, 'run', ENTRY], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? tmpdir(),
      APP_VARIANT: 'counter',
      HOST: '127.0.0.1',
      PORT: String(port),
      REDIS_URL: counterRedisUrl(),
      DATA_DIR: dataDir,
    },
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: 'pipe',
  })
  const base = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    if (proc.exitCode !== null)
      throw new Error(`counter exited: ${await new Response(proc.stderr).text()}`)
    try {
      const response = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2_000) })
      await response.arrayBuffer()
      if (response.status === 200) return { proc, base }
    } catch {
      // not listening yet
    }
    await Bun.sleep(100)
  }
  proc.kill('SIGKILL')
  throw new Error('counter did not become healthy within 30 s')
}

async function stop({ proc }: Running): Promise<number> {
  proc.kill('SIGTERM')
  return proc.exited
}

async function visit(base: string, method = 'GET', path = '/') {
  const response = await fetch(`${base}${path}`, { method })
  return { status: response.status, body: (await response.json()) as { visits: number } }
}

describe.skipIf(skipReason !== undefined)('counter across restarts', () => {
  let dataDir: string
  const flush = async (database: number) => {
    const redis = createRedisCache(counterRedisUrl(database))
    await redis.flush()
    await redis.close()
  }
  const flushBoth = () => Promise.all([flush(COUNTER_DB), flush(COUNTER_DB + 1)])

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'conduit-counter-'))
    await flushBoth()
  })

  afterAll(async () => {
    await flushBoth()
    rmSync(dataDir, { recursive: true, force: true })
  })

  test('keeps counting after the process restarts; POST /reset sets 0', async () => {
    const first = await start(dataDir)
    try {
      expect((await visit(first.base)).body.visits).toBe(1)
      expect((await visit(first.base)).body.visits).toBe(2)
    } finally {
      expect(await stop(first)).toBe(0)
    }

    // The count is state, not a cache copy: a flush of the cache (its prefix,
    // on the same database by default) keeps it.
    const cache = createRedisCache(counterRedisUrl(), { keyPrefix: DEFAULT_CACHE_PREFIX })
    await cache.flush()
    await cache.close()
    const second = await start(dataDir)
    try {
      expect((await visit(second.base)).body.visits).toBe(3)
      const reset = await visit(second.base, 'POST', '/reset')
      expect(reset.status).toBe(200)
      expect(reset.body.visits).toBe(0)
      expect((await visit(second.base)).body.visits).toBe(1)
    } finally {
      expect(await stop(second)).toBe(0)
    }
  }, 90_000)
})
