// Child process of the many-streams scenario: runs its share of the N
// streaming clients (indexes first, first + stride, …), each starting at its
// place in a ramp shared by every child (a wall-clock start time), and prints
// their raw results as one JSON line. A process of its own because Bun's fetch
// caps concurrent requests at 256 unless BUN_CONFIG_MAX_HTTP_REQUESTS is set at
// startup (streaming.ts sets it), and because reading thousands of streams
// takes a core of its own: the scenario splits the clients over several.
import { assertLoopback } from './backend.ts'
import { mainThreadSeconds } from './cpu.ts'
import { type StreamResult, sendAndStream, wallClockMs } from './sse-client.ts'
import { Samples, type Summary } from './stats.ts'

export interface StreamClientsConfig {
  /** Where client i sends: baseUrls[i % length] (one server, the load balancer, or each server in turn). */
  baseUrls: string[]
  runId: string
  /** Clients of the whole scenario, over every child. */
  clients: number
  /** This child runs the clients first, first + stride, first + 2 × stride, … */
  first: number
  stride: number
  rampMs: number
  /** Wall-clock time (ms since the epoch) client 0 starts at. */
  startAtMs: number
  timeoutMs: number
  /** Words of the user message (0: a short one); the local model echoes up to 40. */
  words: number
}

export interface StreamClientsOutput {
  results: StreamResult[]
  /** How late this process's 10 ms timer fired: its event loop's lag, in ms. */
  loopLag: Summary
  /** CPU seconds this process used (user + system), all threads. */
  cpuSeconds: number
  /** Seconds its main thread ran, and waited for a CPU while runnable, from start to end. */
  mainThread: { running: number; waiting: number } | undefined
}

const FILLER = 'please keep talking about streams and queues while the others wait'.split(' ')

/** Client `index`'s message: `words` words long, or a short line when 0. */
export function crowdMessage(index: number, words: number): string {
  const head = `Client ${index} of a crowd:`
  if (words <= 5) return `${head} tell me something while the others wait.`
  const filler = Array.from({ length: words - 5 }, (_, at) => FILLER[at % FILLER.length])
  return `${head} ${filler.join(' ')}.`
}

const round = (value: number) => Math.round(value * 1000) / 1000
type Main = { running: number; waiting: number } | undefined
const subtract = (end: Main, start: Main): Main =>
  end === undefined || start === undefined
    ? undefined
    : { running: end.running - start.running, waiting: end.waiting - start.waiting }

async function main() {
  const config = JSON.parse(process.argv[2] ?? '{}') as StreamClientsConfig
  const mainBefore = mainThreadSeconds('self')
  for (const url of config.baseUrls) assertLoopback('the benchmarked server', url)
  const lag = new Samples()
  let expected = performance.now() + 10
  const ticker = setInterval(() => {
    const now = performance.now()
    lag.add(Math.max(0, now - expected))
    expected = now + 10
  }, 10)
  const indexes: number[] = []
  for (let index = config.first; index < config.clients; index += config.stride) indexes.push(index)
  const results = await Promise.all(
    indexes.map(async (index) => {
      const startAt = config.startAtMs + (index * config.rampMs) / config.clients
      await Bun.sleep(Math.max(0, startAt - wallClockMs()))
      const result = await sendAndStream({
        baseUrl: config.baseUrls[index % config.baseUrls.length] ?? '',
        userId: `${config.runId}-client-${index}`,
        text: crowdMessage(index, config.words),
        timeoutMs: config.timeoutMs,
      })
      // Three decimals are plenty (µs) and keep the JSON line small.
      result.gapsMs = result.gapsMs.map(round)
      return result
    }),
  )
  clearInterval(ticker)
  const cpu = process.cpuUsage()
  const output: StreamClientsOutput = {
    results,
    loopLag: lag.summary(),
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    mainThread: subtract(mainThreadSeconds('self'), mainBefore),
  }
  process.stdout.write(`${JSON.stringify(output)}\n`)
}

if (import.meta.main) await main()
