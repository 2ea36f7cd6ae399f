// How busy the servers' Postgres pools are during a scenario: the servers'
// own connections to Postgres are found from /proc (their sockets to port
// 5432), and pg_stat_activity is sampled for them every 100 ms. A pool whose
// connections are all active or idle in a transaction at most samples is
// where sends queue; one mostly idle is not the limit. Linux and a real
// Postgres only; other users of the same database are left out by port.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import postgres from 'postgres'

export interface PoolActivity {
  samples: number
  /** Connections of the servers seen (the pools open them lazily: at most 10 each). */
  connections: number
  /** Mean connections running a query / holding a transaction open between queries. */
  meanActive: number
  meanIdleInTransaction: number
  /** Fraction of samples in which every seen connection was active or in a transaction. */
  allBusyFraction: number
  /** The most frequent wait events of active connections (`type:event` → samples). */
  waits: Record<string, number>
}

const POSTGRES_PORT_HEX = ':1538'

/** Local ports of `pid`'s TCP connections to port 5432. */
function postgresPorts(pid: number): number[] {
  const inodes = new Set<string>()
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`)
        if (target.startsWith('socket:[')) inodes.add(target.slice(8, -1))
      } catch {}
    }
  } catch {
    return []
  }
  const ports: number[] = []
  for (const table of ['tcp', 'tcp6']) {
    let text = ''
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/)
      const [local, remote, inode] = [fields[1], fields[2], fields[9]]
      if (!local || !remote || !inode || !remote.endsWith(POSTGRES_PORT_HEX)) continue
      if (inodes.has(inode)) ports.push(Number.parseInt(local.split(':')[1] ?? '0', 16))
    }
  }
  return ports
}

export interface PoolMeter {
  stop(): Promise<PoolActivity | undefined>
}

/** Samples the pools of `pids` on the Postgres at `databaseUrl` (loopback, checked by the caller). */
export function meterPools(databaseUrl: string, pids: number[], poolSize = 10): PoolMeter {
  const sql = postgres(databaseUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 })
  const ports = new Set<number>()
  let lastScan = 0
  let samples = 0
  let allBusy = 0
  let active = 0
  let idleInTransaction = 0
  const waits: Record<string, number> = {}
  let running = true
  const loop = (async () => {
    while (running) {
      const started = Date.now()
      // Reading thousands of descriptors costs CPU: only while pools still grow, once a second.
      if (ports.size < poolSize * pids.length && started - lastScan >= 1_000) {
        lastScan = started
        for (const pid of pids) for (const port of postgresPorts(pid)) ports.add(port)
      }
      if (ports.size > 0) {
        const rows = await sql<{ state: string | null; wait: string | null }[]>`
          select state, wait_event_type || ':' || wait_event as wait
          from pg_stat_activity where client_port = any(${[...ports]}::int[])`.catch(() => [])
        if (rows.length > 0) {
          samples++
          let busy = 0
          for (const row of rows) {
            if (row.state === 'active') {
              active++
              busy++
              if (row.wait) waits[row.wait] = (waits[row.wait] ?? 0) + 1
            } else if (row.state?.startsWith('idle in transaction')) {
              idleInTransaction++
              busy++
            }
          }
          if (busy === rows.length) allBusy++
        }
      }
      await Bun.sleep(Math.max(0, 100 - (Date.now() - started)))
    }
  })()
  let result: Promise<PoolActivity | undefined> | undefined
  return {
    stop() {
      result ??= (async () => {
        running = false
        await loop.catch(() => {})
        await sql.end({ timeout: 2 }).catch(() => {})
        if (samples === 0) return undefined
        const top = Object.entries(waits)
          .sort((a, b) => b[1] - a[1])
          .slice(0, 5)
        return {
          samples,
          connections: ports.size,
          meanActive: active / samples,
          meanIdleInTransaction: idleInTransaction / samples,
          allBusyFraction: allBusy / samples,
          waits: Object.fromEntries(top),
        }
      })()
      return result
    },
  }
}
