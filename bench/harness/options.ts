// Command-line options of `bun run bench`. Defaults keep a full run under two
// minutes; --short (CI) keeps it under about half a minute of load.

export interface BenchOptions {
  short: boolean
  /** Measured seconds per request scenario, and again for its paired /health (after warm-ups). */
  durationSec: number
  /** Unmeasured seconds before each request scenario. */
  warmupSec: number
  /** Concurrent connections of the load generator for request scenarios. */
  connections: number
  /** Concurrent clients of the send + stream scenario (closed loop). */
  streamConcurrency: number
  /** Clients of the many-streams scenario, all in flight together. */
  streamClients: number
  /** Spread of the many-streams clients' starts, so they arrive like users, not one packet. */
  streamRampMs: number
  /** The local model's delay between chunks in the many-streams scenario. */
  chunkDelayMs: number
  /** Hard bound on the whole run; past it the run stops and fails. */
  maxSeconds: number
}

const USAGE = `usage: bun run bench [--short] [--duration=S] [--connections=C] [--clients=N] [--max-seconds=S]`

function numberFlag(args: string[], name: string, min: number, max: number): number | undefined {
  const prefix = `--${name}=`
  const raw = args.find((arg) => arg.startsWith(prefix))?.slice(prefix.length)
  if (raw === undefined) return undefined
  const value = Number(raw)
  if (!Number.isFinite(value) || value < min || value > max)
    throw new Error(`--${name} must be a number from ${min} to ${max}\n${USAGE}`)
  return value
}

export function parseOptions(args: string[]): BenchOptions {
  const known = ['--short', '--duration=', '--connections=', '--clients=', '--max-seconds=']
  const unknown = args.find(
    (arg) => !known.some((flag) => arg === flag || (flag.endsWith('=') && arg.startsWith(flag))),
  )
  if (unknown !== undefined) throw new Error(`unknown option ${unknown}\n${USAGE}`)
  const short = args.includes('--short')
  const duration = numberFlag(args, 'duration', 1, 60)
  return {
    short,
    durationSec: duration ?? (short ? 2 : 5),
    warmupSec: short ? 0.5 : 1,
    connections: numberFlag(args, 'connections', 1, 200) ?? 10,
    streamConcurrency: 10,
    streamClients: numberFlag(args, 'clients', 1, 5000) ?? (short ? 50 : 500),
    streamRampMs: 1000,
    chunkDelayMs: 20,
    // A longer --duration gets a bound that fits it (8 measured runs plus the rest).
    maxSeconds:
      numberFlag(args, 'max-seconds', 30, 1800) ??
      (duration === undefined ? 120 : 90 + 10 * duration),
  }
}
