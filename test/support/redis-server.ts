// A private redis-server for tests that must flush, kill connections or point
// whole server processes at a Redis of their own: no persistence, a free
// loopback port, a temporary directory, stopped by pid after the test file.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Redis from 'ioredis'
import { freePort } from './server-process.ts'

export const REDIS_SERVER = Bun.which('redis-server')

export interface PrivateRedis {
  /** `redis://127.0.0.1:<port>` (database 0). */
  url: string
  stop(): Promise<void>
}

/** Starts redis-server (REDIS_SERVER must be set) and waits until it answers PING. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  if (!REDIS_SERVER) throw new Error('redis-server is not installed')
  const port = freePort()
  const dir = mkdtempSync(join(tmpdir(), 'conduit-redis-'))
  const proc = Bun.spawn(
    [
      REDIS_SERVER,
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
    ],
    { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' },
  )
  const url = `redis://127.0.0.1:${port}`
  const stop = async () => {
    proc.kill('SIGKILL')
    await proc.exited
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    for (let attempt = 0; attempt < 100; attempt++) {
      if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}`)
      if (await answers(url)) return { url, stop }
      await Bun.sleep(50)
    }
    throw new Error('redis-server did not answer within 5 s')
  } catch (error) {
    await stop()
    throw error
  }
}

async function answers(url: string): Promise<boolean> {
  const probe = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  })
  probe.on('error', () => {})
  try {
    await probe.connect()
    return (await probe.ping()) === 'PONG'
  } catch {
    return false
  } finally {
    probe.disconnect()
  }
}
