// Command-line options of `bun run bench`. Defaults keep a full run around two
// and a half minutes; --short (CI) keeps it around a minute; --scale
// runs only the streaming scenarios, at thousands of streams, on one and two
// instances, each beside the bare SSE reference (about three minutes).

export interface BenchOptions {
  short: boolean
  /** Only the streaming scenarios (send + stream, many streams), per instance count. */
  scale: boolean
  /** Measured seconds per request scenario, and again for its paired /health (after warm-ups). */
  durationSec: number
  /** Unmeasured seconds before each request scenario. */
  warmupSec: number
  /** Concurrent connections of the load generator for request scenarios. */
  connections: number
  /** Requests a second offered in the open-loop runs (at most half a scenario's saturation rate). */
  ratePerSec: number
  /** Seconds of each open-loop run. */
  openLoopSec: number
  /** Concurrent clients of the send + stream scenario (closed loop). */
  streamConcurrency: number
  /** Clients of the many-streams scenario, all in flight together. */
  streamClients: number
  /** Spread of the many-streams clients' starts, so they arrive like users, not one packet. */
  streamRampMs: number
  /** The local model's delay between chunks in the many-streams scenario. */
  chunkDelayMs: number
  /** Numbers of server instances the streaming scenarios run on, in order (--scale only). */
  instances: number[]
  /** Child processes the many-streams clients are split over. */
  clientProcesses: number
  /** The user message of the many-streams scenario: its length sets the reply's. */
  streamWords: number
  /** Run the streaming scenarios' servers under Bun's CPU profiler (--scale only). */
  profile: boolean
  /** Run the scale scenarios beside a process spinning on one core (--scale only; cpu-hog.ts). */
  cpuHog: boolean
  /** Hard bound on the whole run; past it the run stops and fails. */
  maxSeconds: number
}

const USAGE =
  'usage: bun run bench [--short | --scale] [--duration=S] [--connections=C] [--clients=N] ' +
  '[--rate=R] [--ramp=S] [--chunk-delay=MS] [--instances=1,2] [--client-processes=P] [--words=W] [--profile] [--cpu-hog] [--max-seconds=S]'

function numberFlag(args: string[], name: string, min: number, max: number): number | undefined {
  const prefix = `--${name}=`
  const raw = args.find((arg) => arg.startsWith(prefix))?.slice(prefix.length)
  if (raw === undefined) return undefined
  const value = Number(raw)
  if (!Number.isFinite(value) || value < min || value > max)
    throw new Error(`--${name} must be a number from ${min} to ${max}\n${USAGE}`)
  return value
}

/** `--instances=1,2`: the instance counts to run, each 1 to 4. */
function instancesFlag(args: string[]): number[] | undefined {
  const raw = args.find((arg) => arg.startsWith('--instances='))?.slice('--instances='.length)
  if (raw === undefined) return undefined
  const list = raw.split(',').map(Number)
  if (list.length === 0 || list.some((value) => !Number.isInteger(value) || value < 1 || value > 4))
    throw new Error(`--instances must be a list of instance counts from 1 to 4, e.g. 1,2\n${USAGE}`)
  return list
}

export function parseOptions(args: string[]): BenchOptions {
  const known = [
    '--short',
    '--scale',
    '--duration=',
    '--connections=',
    '--rate=',
    '--clients=',
    '--ramp=',
    '--chunk-delay=',
    '--instances=',
    '--client-processes=',
    '--words=',
    '--profile',
    '--cpu-hog',
    '--max-seconds=',
  ]
  const unknown = args.find(
    (arg) => !known.some((flag) => arg === flag || (flag.endsWith('=') && arg.startsWith(flag))),
  )
  if (unknown !== undefined) throw new Error(`unknown option ${unknown}\n${USAGE}`)
  const short = args.includes('--short')
  const instances = instancesFlag(args)
  // --instances asks for the streaming scenarios on that many servers.
  const scale = args.includes('--scale') || instances !== undefined
  if (short && scale) throw new Error(`--short and --scale do not go together\n${USAGE}`)
  if (args.includes('--profile') && !scale) throw new Error(`--profile needs --scale\n${USAGE}`)
  if (args.includes('--cpu-hog') && !scale) throw new Error(`--cpu-hog needs --scale\n${USAGE}`)
  const duration = numberFlag(args, 'duration', 1, 60)
  const ramp = numberFlag(args, 'ramp', 0, 60)
  const streamClients = numberFlag(args, 'clients', 1, 10_000) ?? (scale ? 5_000 : short ? 50 : 500)
  const streamRampMs = ramp === undefined ? (scale ? 10_000 : 1_000) : ramp * 1000
  const durationSec = duration ?? (short ? 2 : 5)
  const defaultMax = scale
    ? // Per instance count: three server starts (send + stream, many streams,
      // the bare SSE reference), send + stream, and twice the ramp plus the
      // longest streams, with room for the queue a busy machine builds.
      60 + (instances ?? [1, 2]).length * (55 + durationSec + (2 * streamRampMs) / 1000)
    : // Five request scenarios of two saturated and two open-loop runs each, plus
      // the sends, their stack reference, pgbench and many streams; a longer
      // --duration gets a bound that fits it.
      duration === undefined
      ? short
        ? 150
        : 300
      : 200 + 12 * duration
  return {
    short,
    scale,
    durationSec,
    warmupSec: short ? 0.5 : 1,
    connections: numberFlag(args, 'connections', 1, 200) ?? 10,
    ratePerSec: numberFlag(args, 'rate', 100, 50_000) ?? 5_000,
    openLoopSec: short ? 1.5 : 3,
    streamConcurrency: 10,
    streamClients,
    streamRampMs,
    chunkDelayMs: numberFlag(args, 'chunk-delay', 0, 1_000) ?? (scale ? 100 : 20),
    instances: instances ?? (scale ? [1, 2] : [1]),
    // One Bun process reading thousands of streams is itself a bottleneck on
    // a small machine: past 1,000 clients they are split over two.
    clientProcesses: numberFlag(args, 'client-processes', 1, 8) ?? (streamClients > 1_000 ? 2 : 1),
    // 40 words and more make the local model's longest reply (it echoes at
    // most 40): about 60 chunks, 6 s at 100 ms a chunk. Every run uses it, so
    // a stream's CPU per item is an item's, not mostly its turn's.
    streamWords: numberFlag(args, 'words', 0, 200) ?? 48,
    profile: args.includes('--profile'),
    cpuHog: args.includes('--cpu-hog'),
    maxSeconds: numberFlag(args, 'max-seconds', 30, 1800) ?? defaultMax,
  }
}
