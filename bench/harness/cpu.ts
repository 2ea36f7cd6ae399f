// CPU time, read from /proc (Linux): of single processes (the servers, the
// load balancer, the client processes), of every process with a given name
// (postgres, redis-server: shared with whatever else runs on the machine;
// tracked while they come and go, as Postgres backends do), and
// of the whole machine, so a report can show where the cores went during a
// scenario and whether they were all busy. Undefined where /proc is not there.
import { readdirSync, readFileSync } from 'node:fs'

/** Clock ticks per second of /proc's times (USER_HZ: 100 on every Linux port Bun runs on). */
const TICKS_PER_SECOND = 100

/** utime + stime of `pid` (every thread), in seconds. */
export function processCpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the parenthesised command name, which may itself hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const user = Number(fields[11])
    const system = Number(fields[12])
    return Number.isFinite(user + system) ? (user + system) / TICKS_PER_SECOND : undefined
  } catch {
    return undefined
  }
}

/**
 * Seconds the main thread of `pid` (a JavaScript process's event loop) spent
 * running on a CPU, and runnable but waiting for one (the first two fields of
 * /proc/<pid>/schedstat): the second is how much a saturated machine delays
 * it. Running + waiting near 100 % of the time: the loop is never idle.
 */
export function mainThreadSeconds(
  pid: number | 'self',
): { running: number; waiting: number } | undefined {
  try {
    const [running, waiting] = readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ').map(Number)
    if (!Number.isFinite(running) || !Number.isFinite(waiting)) return undefined
    return { running: (running ?? 0) / 1e9, waiting: (waiting ?? 0) / 1e9 }
  } catch {
    return undefined
  }
}

/** CPU seconds of each live process named `name`, by pid. */
function namedCpuByPid(name: string): Map<number, number> {
  const found = new Map<number, number>()
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return found
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== name) continue
    } catch {
      continue
    }
    const seconds = processCpuSeconds(Number(entry))
    if (seconds !== undefined) found.set(Number(entry), seconds)
  }
  return found
}

/**
 * CPU seconds processes named `name` spend from now until stop(), also those
 * that start or exit meanwhile (a pgbench run's backends): each is read every
 * `intervalMs`, so one that exits loses at most what it spent since its last
 * reading. A sum over the live processes at two moments is not this: a process
 * exiting in between takes its whole CPU time out of the second sum.
 */
export function trackNamedCpu(name: string, intervalMs = 100): { stop(): number } {
  const first = namedCpuByPid(name)
  const last = new Map(first)
  const read = () => {
    for (const [pid, seconds] of namedCpuByPid(name)) {
      if (!first.has(pid)) first.set(pid, 0)
      last.set(pid, seconds)
    }
  }
  const timer = setInterval(read, intervalMs)
  return {
    stop() {
      clearInterval(timer)
      read()
      let total = 0
      for (const [pid, seconds] of last) total += Math.max(0, seconds - (first.get(pid) ?? 0))
      return total
    },
  }
}

/** Busy and total CPU seconds of the whole machine, over all cores. */
export function machineCpuSeconds(): { busy: number; total: number } | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? ''
    const values = line.trim().split(/\s+/).slice(1).map(Number)
    const total = values.reduce((sum, value) => sum + value, 0)
    // idle and iowait
    const idle = (values[3] ?? 0) + (values[4] ?? 0)
    return { busy: (total - idle) / TICKS_PER_SECOND, total: total / TICKS_PER_SECOND }
  } catch {
    return undefined
  }
}

export interface CpuUse {
  /** What was measured, e.g. `server 1`, `postgres (all)`. */
  name: string
  /** CPU seconds used between start and stop. */
  seconds: number
  /** seconds over the wall-clock time: 1 = one core busy throughout. */
  cores: number
}

export interface CpuMeter {
  stop(): { wallSec: number; machineBusy: number | undefined; uses: CpuUse[] }
}

/**
 * Starts measuring: `read` gives each named reading (CPU seconds so far), and
 * `named` maps a label to a process name whose processes are tracked while
 * they come and go (trackNamedCpu); stop() returns the differences, and the
 * machine's busy fraction (0–1).
 */
export function meterCpu(
  read: () => Record<string, number | undefined>,
  named: Record<string, string> = {},
): CpuMeter {
  const started = performance.now()
  const before = read()
  const trackers = Object.entries(named).map(
    ([label, name]) => [label, trackNamedCpu(name)] as const,
  )
  const machineBefore = machineCpuSeconds()
  return {
    stop() {
      const wallSec = (performance.now() - started) / 1000
      const after = read()
      const machineAfter = machineCpuSeconds()
      const uses: CpuUse[] = []
      const use = (name: string, seconds: number) =>
        uses.push({ name, seconds, cores: wallSec > 0 ? seconds / wallSec : 0 })
      for (const [name, end] of Object.entries(after)) {
        const start = before[name]
        if (end === undefined || start === undefined) continue
        use(name, Math.max(0, end - start))
      }
      for (const [label, tracker] of trackers) use(label, tracker.stop())
      const machineBusy =
        machineBefore && machineAfter && machineAfter.total > machineBefore.total
          ? (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total)
          : undefined
      return { wallSec, machineBusy, uses }
    },
  }
}
