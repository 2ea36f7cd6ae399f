// A private redis-server for fault tests: started on a free loopback port with
// its own directory, killed, frozen (SIGSTOP) and restarted by the test - also
// from a snapshot taken earlier, as a restore or a failover to a stale replica
// would bring it back. Only where a redis-server binary is installed.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import Redis from 'ioredis'
import { freePort, sleep } from './server-process.ts'

export const REDIS_SERVER = Bun.which('redis-server')

export interface PrivateRedis {
  readonly port: number
  readonly url: string
  /** A client of its own (for SAVE, or to look at what is stored). */
  admin: Redis
  /** Starts (or restarts) the server, loading dump.rdb from its directory if there is one. */
  start(): Promise<void>
  /** SIGKILL: no shutdown save, connections cut. */
  kill(): Promise<void>
  /** SIGSTOP / SIGCONT: connections stay open, nothing answers. */
  freeze(): void
  thaw(): void
  /** Writes a snapshot (dump.rdb) now. */
  save(): Promise<void>
  stop(): Promise<void>
}

export function privateRedis(): PrivateRedis {
  if (!REDIS_SERVER) throw new Error('redis-server is not installed')
  const binary = REDIS_SERVER
  const port = freePort()
  const dir = mkdtempSync(join(tmpdir(), 'conduit-redis-'))
  let proc: Subprocess | undefined
  const admin = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    retryStrategy: () => 50,
  })
  admin.on('error', () => {})

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    admin,
    async start() {
      proc = Bun.spawn(
        [
          binary,
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
          '--dbfilename',
          'dump.rdb',
          '--daemonize',
          'no',
        ],
        { stdout: 'ignore', stderr: 'ignore' },
      )
      const deadline = Date.now() + 10_000
      for (;;) {
        try {
          if (admin.status === 'wait' || admin.status === 'end') await admin.connect()
          if ((await admin.ping()) === 'PONG') return
        } catch {
          if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not start`)
        }
        await sleep(20)
      }
    },
    async kill() {
      proc?.kill('SIGKILL')
      await proc?.exited
    },
    freeze() {
      proc?.kill('SIGSTOP')
    },
    thaw() {
      proc?.kill('SIGCONT')
    },
    async save() {
      await admin.save()
    },
    async stop() {
      admin.disconnect()
      if (proc && proc.exitCode === null) {
        proc.kill('SIGCONT')
        proc.kill('SIGKILL')
        await proc.exited
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A private redis-server, started and answering. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const redis = privateRedis()
  await redis.start()
  return redis
}
