// The many-streams scenario: a fresh deployment (one instance, or several
// behind a load balancer) with the local model at a realistic pace, N clients
// each streaming one reply, started over a ramp from one or more client
// processes. Samples each server's resident memory for its peak, counts how
// many streams were open at once, and meters where the CPU went (servers,
// load balancer, clients, Redis, Postgres) and what Redis did.
import { join } from 'node:path'
import type { Backend } from './backend.ts'
import { tail, terminate, track } from './children.ts'
import { type Cluster, meterCluster, startCluster } from './cluster.ts'
import type { CpuUse } from './cpu.ts'
import type { PoolActivity } from './pg-activity.ts'
import type { RedisDelta } from './redis-stats.ts'
import { readOverloadReasons } from './refusals.ts'
import { readRss, sampleRss } from './rss.ts'
import { withFileLimit } from './server.ts'
import { type StreamResult, sendAndStream, wallClockMs } from './sse-client.ts'
import { type Summary, summarize } from './stats.ts'
import type { StreamClientsConfig, StreamClientsOutput } from './stream-clients.ts'
import { type StreamSummary, summarizeStreams } from './stream-summary.ts'

export interface ManyStreamsSettings {
  clients: number
  rampMs: number
  chunkDelayMs: number
  runId: string
  /** Server instances (more than one: behind a load balancer). */
  instances?: number
  /** Child processes the clients are split over. */
  clientProcesses?: number
  /** Words of each client's message (0: a short one). */
  words?: number
  /** Profile the servers (see startCluster) under this name. */
  profileName?: string
}

export interface ServerMemory {
  /** RSS after start and warm-up, before the clients. */
  rssBeforeBytes: number | undefined
  rssPeakBytes: number | undefined
}

export interface ManyStreamsResult extends StreamSummary {
  /** The servers' conduit_overloaded_total by reason, read after the run (refusals.ts). */
  overloadReasons?: Record<string, number>
  clients: number
  chunkDelayMs: number
  rampMs: number
  instances: number
  routing: string
  clientProcesses: number
  words: number
  /** The first server's RSS after warm-up (one instance: the server's). */
  rssBeforeBytes: number | undefined
  /** The highest peak RSS of any server. */
  rssPeakBytes: number | undefined
  servers: ServerMemory[]
  /** Most requests open at once (sent, not yet ended), over every client process. */
  peakOpen: number
  /** Most streams at once between their first append item and their end. */
  peakStreaming: number
  /** Streams that got their first item, per second, from the first first item to the last. */
  turnsPerSec: number
  /** Event-loop lag of each client process (a busy client delays what it measures). */
  clientLoopLag: Summary[]
  cpu: { wallSec: number; machineBusy: number | undefined; uses: CpuUse[] }
  /** Time each server's and client process's main thread ran, and waited for a CPU (`<name> running` / `<name> waiting`; cores = fraction of the time). */
  runQueue: CpuUse[]
  redis: RedisDelta | undefined
  /** The servers' Postgres pools (real Postgres only). */
  pools: PoolActivity | undefined
  /** Second by second from the start of the ramp. */
  timeline: TimelineSecond[]
}

export interface TimelineSecond {
  /** Seconds from the ramp's start: this row covers [second, second + 1). */
  second: number
  sent: number
  firstItems: number
  ended: number
  /** Requests open at the end of the second. */
  open: number
  /** Append items that arrived in the second, and the p99 of their gaps. */
  items: number
  gapP99Ms: number
}

const STREAM_TIMEOUT_MS = 60_000
/** Concurrent warm-up sends per instance: compiles the hot paths before the crowd. */
const WARM_UP_SENDS = 5
/** Time the client processes get to start before the ramp begins. */
const CLIENT_START_MS = 1_500

interface ClientsRun {
  results: StreamResult[]
  loopLag: Summary[]
  cpuSeconds: number[]
  mainThread: StreamClientsOutput['mainThread'][]
}

function spawnClients(config: StreamClientsConfig, share: number) {
  return track(
    Bun.spawn(
      withFileLimit([
        process.execPath,
        join(import.meta.dir, 'stream-clients.ts'),
        JSON.stringify(config),
      ]),
      {
        env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: String(share + 64) },
        stdin: 'ignore',
        stdout: 'pipe',
        stderr: 'pipe',
      },
    ),
  )
}

async function runClients(base: Omit<StreamClientsConfig, 'first' | 'stride'>, processes: number) {
  const children = Array.from({ length: processes }, (_, first) =>
    spawnClients({ ...base, first, stride: processes }, Math.ceil(base.clients / processes)),
  )
  // Every client has its own timeout; this only bounds a child that hangs anyway.
  const limitMs = base.startAtMs - Date.now() + base.rampMs + base.timeoutMs + 15_000
  const guard = setTimeout(() => {
    for (const child of children) child.kill('SIGKILL')
  }, limitMs)
  try {
    const outputs = await Promise.all(
      children.map(async (child) => {
        const errors = tail(child.stderr)
        const output = await new Response(child.stdout).text()
        const code = await child.exited
        const line = output.trim().split('\n').at(-1)
        if (code !== 0 || !line)
          throw new Error(`the stream clients failed (exit ${code}):\n${errors()}`)
        return JSON.parse(line) as StreamClientsOutput
      }),
    )
    const run: ClientsRun = {
      results: outputs.flatMap((output) => output.results),
      loopLag: outputs.map((output) => output.loopLag),
      cpuSeconds: outputs.map((output) => output.cpuSeconds),
      mainThread: outputs.map((output) => output.mainThread),
    }
    return run
  } finally {
    clearTimeout(guard)
    await Promise.all(children.map((child) => terminate(child, 1_000)))
  }
}

/** Most intervals [start, end) overlapping at one moment. */
export function peakOverlap(intervals: [number, number][]): number {
  const events: [number, number][] = []
  for (const [start, end] of intervals) events.push([start, 1], [end, -1])
  // Ends before starts at the same instant.
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1])
  let open = 0
  let peak = 0
  for (const [, change] of events) {
    open += change
    peak = Math.max(peak, open)
  }
  return peak
}

function concurrency(results: StreamResult[]) {
  const open = results.map((r): [number, number] => [r.startedAtMs, r.startedAtMs + r.durationMs])
  const streaming = results.flatMap((r): [number, number][] =>
    r.firstItemAtMs === undefined ? [] : [[r.firstItemAtMs, r.startedAtMs + r.durationMs]],
  )
  const firsts = streaming.map(([first]) => first).sort((a, b) => a - b)
  const span = ((firsts.at(-1) ?? 0) - (firsts[0] ?? 0)) / 1000
  return {
    peakOpen: peakOverlap(open),
    peakStreaming: peakOverlap(streaming),
    turnsPerSec: span > 0 ? (firsts.length - 1) / span : 0,
  }
}

/** What happened each second: sends, first items, ends, items and their gaps. */
export function timelineOf(results: StreamResult[], startAtMs: number): TimelineSecond[] {
  const rows: { row: TimelineSecond; gaps: number[] }[] = []
  const at = (time: number) => {
    const second = Math.max(0, Math.floor((time - startAtMs) / 1000))
    while (rows.length <= second)
      rows.push({
        row: {
          second: rows.length,
          sent: 0,
          firstItems: 0,
          ended: 0,
          open: 0,
          items: 0,
          gapP99Ms: 0,
        },
        gaps: [],
      })
    return rows[second] as { row: TimelineSecond; gaps: number[] }
  }
  for (const result of results) {
    at(result.startedAtMs).row.sent++
    at(result.startedAtMs + result.durationMs).row.ended++
    if (result.firstItemAtMs === undefined) continue
    let time = result.firstItemAtMs
    at(time).row.firstItems++
    at(time).row.items++
    for (const gap of result.gapsMs) {
      time += gap
      const bucket = at(time)
      bucket.row.items++
      bucket.gaps.push(gap)
    }
  }
  let open = 0
  return rows.map(({ row, gaps }) => {
    open += row.sent - row.ended
    return { ...row, open, gapP99Ms: summarize(gaps).p99 }
  })
}

export async function runManyStreams(
  backend: Backend,
  settings: ManyStreamsSettings,
): Promise<ManyStreamsResult> {
  const cluster = await startCluster(
    backend,
    settings.instances ?? 1,
    settings.chunkDelayMs,
    settings.profileName,
  )
  try {
    return await measureManyStreams(cluster, backend, settings)
  } finally {
    await cluster.stop()
  }
}

/**
 * The many-streams crowd against a deployment already started (the service's,
 * or the bare SSE reference wrapped as one, see bare-sse-streams.ts): warm-up
 * sends, then the clients, with every server's RSS and the meters running.
 * The caller stops the deployment.
 */
export async function measureManyStreams(
  cluster: Cluster,
  backend: Backend,
  settings: ManyStreamsSettings,
): Promise<ManyStreamsResult> {
  const instances = cluster.servers.length
  const clientProcesses = settings.clientProcesses ?? 1
  const words = settings.words ?? 0
  // A fresh process compiles its hot paths on first use: a few sends to
  // each instance first, so the crowd measures the steady state.
  await Promise.all(
    cluster.servers.flatMap((server) =>
      Array.from({ length: WARM_UP_SENDS }, (_, index) =>
        sendAndStream({
          baseUrl: server.url,
          userId: `${settings.runId}-warm-${index}`,
          text: 'Warming up.',
          timeoutMs: 30_000,
        }),
      ),
    ),
  )
  const memory = cluster.servers.map((server) => ({
    before: readRss(server.pid),
    sampler: sampleRss(server.pid, 100),
  }))
  const { cpu, waits, redis, pools } = await meterCluster(cluster, backend, 'harness')
  try {
    const startAtMs = wallClockMs() + CLIENT_START_MS
    const run = await runClients(
      {
        baseUrls: cluster.targets,
        runId: settings.runId,
        clients: settings.clients,
        rampMs: settings.rampMs,
        startAtMs,
        timeoutMs: STREAM_TIMEOUT_MS,
        words,
      },
      clientProcesses,
    )
    const usage = cpu.stop()
    const waited = waits.stop()
    const overloadReasons = await readOverloadReasons(cluster.servers.map((server) => server.url))
    const redisDelta = await redis?.stop()
    const poolActivity = await pools?.stop()
    const servers = memory.map(({ before, sampler }) => ({
      rssBeforeBytes: before,
      rssPeakBytes: sampler.stop().peak,
    }))
    const ends = run.results.map((result) => result.startedAtMs + result.durationMs)
    const durationSec = (Math.max(startAtMs, ...ends) - startAtMs) / 1000
    const peaks = servers.flatMap((server) =>
      server.rssPeakBytes === undefined ? [] : [server.rssPeakBytes],
    )
    return {
      ...summarizeStreams(run.results, durationSec),
      ...concurrency(run.results),
      overloadReasons,
      clients: settings.clients,
      chunkDelayMs: settings.chunkDelayMs,
      rampMs: settings.rampMs,
      instances,
      routing: cluster.routing,
      clientProcesses,
      words,
      rssBeforeBytes: servers[0]?.rssBeforeBytes,
      rssPeakBytes: peaks.length > 0 ? Math.max(...peaks) : undefined,
      servers,
      clientLoopLag: run.loopLag,
      cpu: {
        ...usage,
        uses: [
          ...usage.uses,
          ...run.cpuSeconds.map((seconds, index) => ({
            name: `client process ${index + 1}`,
            seconds,
            cores: usage.wallSec > 0 ? seconds / usage.wallSec : 0,
          })),
        ],
      },
      runQueue: [
        ...waited.uses,
        ...run.mainThread.flatMap((main, index) =>
          main === undefined
            ? []
            : (['running', 'waiting'] as const).map((kind) => ({
                name: `client process ${index + 1} ${kind}`,
                seconds: main[kind],
                cores: waited.wallSec > 0 ? main[kind] / waited.wallSec : 0,
              })),
        ),
      ],
      redis: redisDelta,
      pools: poolActivity,
      timeline: timelineOf(run.results, startAtMs),
    }
  } finally {
    for (const { sampler } of memory) sampler.stop()
    await redis?.stop()
    await pools?.stop()
  }
}
