// A private Postgres server for fault tests: its own cluster (initdb) in a
// temp directory, on a free loopback port, that the test freezes (SIGSTOP of
// the postmaster and every backend, as a paused VM or a stuck host would),
// stops (`pg_ctl stop -m fast` or `-m immediate`, as a restart or a crash
// would) and starts again on the same data and port. Unlike the TCP fault
// proxy (fault-proxy.ts), the server itself is faulted: statements already
// running stop mid-way, a stop ends sessions with the server's own errors
// (57P01 admin_shutdown, a reset connection), a restart comes back empty of
// sessions. An admin client reads pg_stat_activity. Only processes this
// module started are signalled; only where Postgres binaries are installed.
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import type { Subprocess } from 'bun'
import postgres from 'postgres'
import { freePort, sleep } from './server-process.ts'

const TOOLS = ['initdb', 'pg_ctl', 'postgres'] as const

/** The directory holding initdb, pg_ctl and postgres: on PATH, else Debian's /usr/lib/postgresql/<version>/bin (newest). */
function findBinaries(): string | undefined {
  const holdsAll = (dir: string) => TOOLS.every((tool) => existsSync(join(dir, tool)))
  const onPath = Bun.which('pg_ctl')
  // Debian links some tools onto PATH; all of them live next to the real pg_ctl.
  if (onPath)
    for (const dir of [dirname(realpathSync(onPath)), dirname(onPath)])
      if (holdsAll(dir)) return dir
  const debian = '/usr/lib/postgresql'
  if (!existsSync(debian)) return undefined
  const versions = readdirSync(debian)
    .filter((name) => /^\d+(\.\d+)?$/.test(name))
    .sort((a, b) => Number(b) - Number(a))
  for (const version of versions) {
    const dir = join(debian, version, 'bin')
    if (holdsAll(dir)) return dir
  }
  return undefined
}

export const POSTGRES_BIN = findBinaries()

/** Why this machine cannot run a private Postgres, or undefined when it can. */
export const privatePostgresMissing = POSTGRES_BIN
  ? undefined
  : `no Postgres binaries (${TOOLS.join(', ')}) on PATH or under /usr/lib/postgresql/*/bin`

/**
 * Whom the server runs as: initdb and postgres refuse to run as root, so as
 * root the cluster belongs to the `postgres` OS user (Debian's package creates it).
 */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((entry) => entry.startsWith('postgres:'))
  const [, , uid, gid] = line?.split(':') ?? []
  if (uid === undefined || gid === undefined)
    throw new Error('running as root, and there is no `postgres` OS user to run Postgres as')
  return { uid: Number(uid), gid: Number(gid) }
}

/** The parent pid of every process, from /proc/<pid>/stat (the field after the name). */
function parentsOf(): Map<number, number> {
  const parents = new Map<number, number>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      // The name is in parentheses and may hold spaces: read after its closing one.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      parents.set(Number(entry), Number(fields[1]))
    } catch {
      // The process ended while the list was read.
    }
  }
  return parents
}

/** Every process below pid (its backends and auxiliary processes, for a postmaster). */
export function descendantsOf(pid: number): number[] {
  const parents = parentsOf()
  const found: number[] = []
  const queue = [pid]
  while (queue.length > 0) {
    const parent = queue.shift() as number
    for (const [child, ppid] of parents)
      if (ppid === parent) {
        found.push(child)
        queue.push(child)
      }
  }
  return found
}

/** A process's state letter (`T` when stopped by a signal), or undefined when it is gone. */
function stateOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0]
  } catch {
    return undefined
  }
}

/** Sends a signal to a process that may have ended meanwhile. */
function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name)
  } catch {
    // ESRCH: it ended.
  }
}

export interface BackendActivity {
  pid: number
  datname: string | null
  application_name: string
  state: string | null
  xact_start: Date | null
  query: string
}

export interface PrivatePostgres {
  readonly port: number
  /** A URL of `database` on this server (trust authentication, user postgres). */
  url(database: string): string
  /** A client of the `postgres` database for the test's own look (one connection). */
  admin: postgres.Sql
  /**
   * Runs fn on a client of `database` (one connection, its own), again while
   * the server is starting or after a restart cut the client's session.
   */
  adminQuery<T>(
    fn: (sql: postgres.Sql) => Promise<T>,
    options?: { database?: string; withinMs?: number },
  ): Promise<T>
  /** The client backends connected to `database` (the admin's own left out). */
  activity(database: string): Promise<BackendActivity[]>
  /** Starts the server (again) on the same data directory and port; resolves once it answers. */
  start(): Promise<void>
  /** SIGSTOP of the postmaster and every process below it; resolves once all are stopped. Returns their pids. */
  freeze(): Promise<number[]>
  /** SIGCONT of every process freeze() stopped. */
  thaw(): void
  /** `pg_ctl stop -m <mode>`; resolves once the postmaster has exited. */
  stop(mode: 'fast' | 'immediate'): Promise<void>
  /** Stops the server (immediate) and removes its directory. */
  close(): Promise<void>
}

export function privatePostgres(): PrivatePostgres {
  if (!POSTGRES_BIN) throw new Error(privatePostgresMissing)
  const bin = POSTGRES_BIN
  const user = serverUser()
  const port = freePort()
  const dir = mkdtempSync(join(tmpdir(), 'conduit-postgres-'))
  if (user) chownSync(dir, user.uid, user.gid)
  const data = join(dir, 'data')
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C', HOME: dir }
  const spawnOptions = { env, ...(user ?? {}) }
  let postmaster: Subprocess | undefined
  let frozen: number[] = []
  let initialized = false

  const clients = new Map<string, postgres.Sql>()
  const clientOf = (database: string) => {
    let client = clients.get(database)
    if (!client) {
      client = postgres({
        host: '127.0.0.1',
        port,
        user: 'postgres',
        database,
        max: 1,
        connect_timeout: 2,
        idle_timeout: 5,
        onnotice: () => {},
      })
      clients.set(database, client)
    }
    return client
  }
  const admin = clientOf('postgres')

  async function run(command: string[], what: string): Promise<void> {
    const proc = Bun.spawn(command, { ...spawnOptions, stdout: 'pipe', stderr: 'pipe' })
    const [code, out, err] = await Promise.all([
      proc.exited,
      new Response(proc.stdout).text(),
      new Response(proc.stderr).text(),
    ])
    if (code !== 0) throw new Error(`${what} failed (exit ${code}): ${out}${err}`)
  }

  async function adminQuery<T>(
    fn: (sql: postgres.Sql) => Promise<T>,
    { database = 'postgres', withinMs = 30_000 } = {},
  ): Promise<T> {
    const deadline = Date.now() + withinMs
    for (;;) {
      try {
        return await fn(clientOf(database))
      } catch (error) {
        if (Date.now() > deadline) throw error
        await sleep(100)
      }
    }
  }

  return {
    port,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    admin,
    adminQuery,
    activity: (database) =>
      adminQuery(
        (sql) => sql<BackendActivity[]>`
          SELECT pid, datname, application_name, state, xact_start, query
            FROM pg_stat_activity
           WHERE datname = ${database} AND backend_type = 'client backend'
             AND pid <> pg_backend_pid()`,
      ),
    async start() {
      if (!initialized) {
        // Trust: it listens on loopback only, for this test.
        await run(
          [
            join(bin, 'initdb'),
            '-D',
            data,
            '-U',
            'postgres',
            '--auth=trust',
            '--no-sync',
            '--encoding=UTF8',
            '--locale=C',
          ],
          'initdb',
        )
        initialized = true
      }
      // A direct child (not pg_ctl start), so its exit is awaited and it is
      // the only process signalled; its socket file stays in the temp dir.
      // No fsync (a cluster thrown away after), but commits stay synchronous:
      // with synchronous_commit off an immediate stop loses the last ones,
      // as no real deployment would.
      postmaster = Bun.spawn(
        [
          join(bin, 'postgres'),
          '-D',
          data,
          '-c',
          `port=${port}`,
          '-c',
          'listen_addresses=127.0.0.1',
          '-c',
          `unix_socket_directories=${dir}`,
          '-c',
          'fsync=off',
          '-c',
          'full_page_writes=off',
          '-c',
          'shared_buffers=16MB',
          '-c',
          'max_connections=100',
        ],
        { ...spawnOptions, stdout: 'ignore', stderr: 'ignore' },
      )
      await adminQuery((sql) => sql`SELECT 1`)
    },
    async freeze() {
      const root = postmaster?.pid
      if (root === undefined) throw new Error('postgres is not running')
      // The postmaster first, so it forks no backend the list below would miss.
      signal(root, 'SIGSTOP')
      const stopped = new Set([root])
      for (;;) {
        const fresh = descendantsOf(root).filter((pid) => !stopped.has(pid))
        if (fresh.length === 0) break
        for (const pid of fresh) {
          signal(pid, 'SIGSTOP')
          stopped.add(pid)
        }
      }
      frozen = [...stopped]
      // A stop is delivered asynchronously: wait until the kernel shows each one stopped.
      const deadline = Date.now() + 10_000
      while (frozen.some((pid) => !['T', undefined].includes(stateOf(pid)))) {
        if (Date.now() > deadline) throw new Error('postgres processes did not stop')
        await sleep(10)
      }
      return frozen
    },
    thaw() {
      for (const pid of frozen) signal(pid, 'SIGCONT')
      frozen = []
    },
    async stop(mode) {
      if (!postmaster || postmaster.exitCode !== null) return
      this.thaw()
      await run(
        [join(bin, 'pg_ctl'), 'stop', '-D', data, '-m', mode, '-w', '-t', '60'],
        'pg_ctl stop',
      )
      await postmaster.exited
    },
    async close() {
      await Promise.all(
        [...clients.values()].map((client) => client.end({ timeout: 1 }).catch(() => {})),
      )
      this.thaw()
      if (postmaster && postmaster.exitCode === null) {
        const root = postmaster.pid
        await this.stop('immediate').catch(() => {
          // Not stopped in time: the postmaster and what it started, and nothing else.
          for (const pid of descendantsOf(root)) signal(pid, 'SIGKILL')
          signal(root, 'SIGKILL')
        })
        await postmaster.exited
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** A private Postgres, started and answering. */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const server = privatePostgres()
  try {
    await server.start()
  } catch (error) {
    await server.close()
    throw error
  }
  return server
}
