// The many-streams scenario: a fresh server with the local model at a
// realistic pace, N clients each streaming one reply at the same time, and the
// server's resident memory sampled throughout for its peak.
import { join } from 'node:path'
import type { Backend } from './backend.ts'
import { tail, terminate, track } from './children.ts'
import { readRss, sampleRss } from './rss.ts'
import { startServer } from './server.ts'
import { sendAndStream } from './sse-client.ts'
import type { StreamClientsConfig } from './stream-clients.ts'
import type { StreamSummary } from './stream-summary.ts'

export interface ManyStreamsSettings {
  clients: number
  rampMs: number
  chunkDelayMs: number
  runId: string
}

export interface ManyStreamsResult extends StreamSummary {
  clients: number
  chunkDelayMs: number
  /** Server RSS after start and warm-up, before the clients. */
  rssBeforeBytes: number | undefined
  rssPeakBytes: number | undefined
}

const STREAM_TIMEOUT_MS = 60_000
const WARM_UP_SENDS = 3

async function runClients(config: StreamClientsConfig): Promise<StreamSummary> {
  const child = track(
    Bun.spawn(
      [process.execPath, join(import.meta.dir, 'stream-clients.ts'), JSON.stringify(config)],
      {
        env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: String(config.clients + 64) },
        stdin: 'ignore',
        stdout: 'pipe',
        stderr: 'pipe',
      },
    ),
  )
  const errors = tail(child.stderr)
  // Every client has its own timeout; this only bounds a child that hangs anyway.
  const guard = setTimeout(() => child.kill('SIGKILL'), config.timeoutMs + config.rampMs + 15_000)
  try {
    const output = await new Response(child.stdout).text()
    const code = await child.exited
    const line = output.trim().split('\n').at(-1)
    if (code !== 0 || !line)
      throw new Error(`the stream clients failed (exit ${code}):\n${errors()}`)
    return JSON.parse(line) as StreamSummary
  } finally {
    clearTimeout(guard)
    await terminate(child, 1_000)
  }
}

export async function runManyStreams(
  backend: Backend,
  settings: ManyStreamsSettings,
): Promise<ManyStreamsResult> {
  const server = await startServer({ backend, chunkDelayMs: settings.chunkDelayMs })
  try {
    // A fresh process compiles its hot paths on first use: a few sends first,
    // so the crowd measures the steady state.
    for (let index = 0; index < WARM_UP_SENDS; index++) {
      await sendAndStream({
        baseUrl: server.url,
        userId: `${settings.runId}-warm`,
        text: 'Warming up.',
        timeoutMs: 30_000,
      })
    }
    const rssBeforeBytes = readRss(server.pid)
    const sampler = sampleRss(server.pid, 100)
    try {
      const summary = await runClients({
        baseUrl: server.url,
        runId: settings.runId,
        clients: settings.clients,
        rampMs: settings.rampMs,
        timeoutMs: STREAM_TIMEOUT_MS,
      })
      const { peak } = sampler.stop()
      return {
        ...summary,
        clients: settings.clients,
        chunkDelayMs: settings.chunkDelayMs,
        rssBeforeBytes,
        rssPeakBytes: peak,
      }
    } finally {
      sampler.stop()
    }
  } finally {
    await server.stop()
  }
}
