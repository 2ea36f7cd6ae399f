// Child process of the many-streams scenario: starts N streaming clients
// (spread over a short ramp) and prints their summary as one JSON line. A
// process of its own because Bun's fetch caps concurrent requests at 256
// unless BUN_CONFIG_MAX_HTTP_REQUESTS is set at startup (streaming.ts sets it).
import { assertLoopback } from './backend.ts'
import { sendAndStream } from './sse-client.ts'
import { summarizeStreams } from './stream-summary.ts'

export interface StreamClientsConfig {
  baseUrl: string
  runId: string
  clients: number
  rampMs: number
  timeoutMs: number
}

async function main() {
  const config = JSON.parse(process.argv[2] ?? '{}') as StreamClientsConfig
  assertLoopback('the benchmarked server', config.baseUrl)
  const started = performance.now()
  const results = await Promise.all(
    Array.from({ length: config.clients }, async (_, index) => {
      await Bun.sleep((index * config.rampMs) / config.clients)
      return sendAndStream({
        baseUrl: config.baseUrl,
        userId: `${config.runId}-client-${index}`,
        text: `Client ${index} of a crowd: tell me something while the others wait.`,
        timeoutMs: config.timeoutMs,
      })
    }),
  )
  const summary = summarizeStreams(results, (performance.now() - started) / 1000)
  process.stdout.write(`${JSON.stringify(summary)}\n`)
}

if (import.meta.main) await main()
