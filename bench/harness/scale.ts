// `bun run bench --scale`: only the streaming scenarios, for each instance
// count asked (default 1, then 2 behind nginx): send + stream (closed loop, no
// model delay: how many turns a second the deployment admits and runs), then
// many streams (thousands of clients over a ramp, the local model at a
// realistic pace), then the same many-streams clients against the bare SSE
// reference (bare-sse-streams.ts), the machine's own figures for that load.
// Each on a fresh deployment.
import { randomBytes } from 'node:crypto'
import type { Backend } from './backend.ts'
import { type BareSseComparison, compareWithBareSse } from './bare-sse-comparison.ts'
import { runManyStreamsOnBareSse } from './bare-sse-streams.ts'
import { meterCluster, startCluster } from './cluster.ts'
import type { CpuUse } from './cpu.ts'
import { startCpuHog } from './cpu-hog.ts'
import type { BenchOptions } from './options.ts'
import type { PoolActivity } from './pg-activity.ts'
import type { RedisDelta } from './redis-stats.ts'
import { describeRefusals } from './refusals.ts'
import { runSendStream } from './send-stream.ts'
import type { StreamSummary } from './stream-summary.ts'
import { type ManyStreamsResult, runManyStreams } from './streaming.ts'

export interface ScaleSendStream extends StreamSummary {
  instances: number
  routing: string
  concurrency: number
  cpu: { wallSec: number; machineBusy: number | undefined; uses: CpuUse[] }
  /** Time each server's main thread ran, and waited for a CPU (`server k running` / `server k waiting`; cores = fraction of the time). */
  runQueue: CpuUse[]
  redis: RedisDelta | undefined
  pools: PoolActivity | undefined
}

export interface ScaleStep {
  instances: number
  sendStream: ScaleSendStream
  manyStreams: ManyStreamsResult
  /** The same many-streams clients against the bare SSE reference, one instance. */
  bareSse: ManyStreamsResult
  /** manyStreams beside bareSse, with the ratios (service ÷ reference). */
  versusBareSse: BareSseComparison
}

/** Unmeasured seconds of send + stream first: a fresh server compiles its hot paths. */
const WARM_UP_SEC = 1

async function measureSendStream(
  backend: Backend,
  options: BenchOptions,
  instances: number,
  runId: string,
): Promise<ScaleSendStream> {
  const profileName = options.profile ? `${backend.label}-send-stream-${instances}i` : undefined
  const cluster = await startCluster(backend, instances, 0, profileName)
  try {
    const settings = { concurrency: options.streamConcurrency, durationSec: WARM_UP_SEC }
    await runSendStream(cluster.targets, `${runId}-warm`, settings)
    const { cpu, waits, redis, pools } = await meterCluster(
      cluster,
      backend,
      'harness (the clients)',
    )
    const summary = await runSendStream(cluster.targets, runId, {
      ...settings,
      durationSec: options.durationSec,
    })
    return {
      ...summary,
      instances,
      routing: cluster.routing,
      concurrency: options.streamConcurrency,
      cpu: cpu.stop(),
      runQueue: waits.stop().uses,
      redis: await redis?.stop(),
      pools: await pools?.stop(),
    }
  } finally {
    await cluster.stop()
  }
}

export async function runScale(
  backend: Backend,
  options: BenchOptions,
  say: (message: string) => void,
): Promise<ScaleStep[]> {
  const runId = `bench${Date.now().toString(36)}${randomBytes(3).toString('hex')}`
  const steps: ScaleStep[] = []
  // Spins for the whole run at most, and is killed once the scenarios end.
  const hog = options.cpuHog ? startCpuHog(options.maxSeconds) : undefined
  if (hog) say(`a CPU hog spins beside the deployment (pid ${hog.pid})`)
  try {
    await runSteps(backend, options, runId, steps, say)
  } finally {
    await hog?.stop()
  }
  return steps
}

/** Each instance count's scenarios, in order, appended to steps as they end. */
async function runSteps(
  backend: Backend,
  options: BenchOptions,
  runId: string,
  steps: ScaleStep[],
  say: (message: string) => void,
): Promise<void> {
  for (const instances of options.instances) {
    const where = instances === 1 ? '1 instance' : `${instances} instances`
    say(`send + stream on ${where}: ${options.streamConcurrency} clients, ${options.durationSec} s`)
    const sendStream = await measureSendStream(
      backend,
      options,
      instances,
      `${runId}-i${instances}`,
    )
    say(
      `send + stream on ${where}: ${sendStream.streamsPerSec.toFixed(0)} turns/s, ` +
        `${sendStream.completed} / ${sendStream.streams} complete`,
    )
    if (sendStream.completed === 0)
      throw new Error(
        `send + stream on ${where}: no stream completed, so the many-streams scenario would only ` +
          `wait for its timeouts (${sendStream.errors.join('; ') || 'no error reported'})`,
      )
    say(
      `many streams on ${where}: ${options.streamClients} clients over ${options.streamRampMs / 1000} s, ` +
        `${options.chunkDelayMs} ms chunks, ${options.clientProcesses} client process(es)`,
    )
    const manyStreamsSettings = {
      clients: options.streamClients,
      rampMs: options.streamRampMs,
      chunkDelayMs: options.chunkDelayMs,
      runId: `${runId}-i${instances}`,
      clientProcesses: options.clientProcesses,
      words: options.streamWords,
    }
    const manyStreams = await runManyStreams(backend, {
      ...manyStreamsSettings,
      instances,
      ...(options.profile ? { profileName: `${backend.label}-many-streams-${instances}i` } : {}),
    })
    say(
      `many streams on ${where} (${manyStreams.routing}): ${manyStreams.completed} / ${manyStreams.clients} complete, ` +
        `peak ${manyStreams.peakOpen} open, gap p99 ${manyStreams.itemGap.p99.toFixed(1)} ms; ` +
        `refused: ${describeRefusals(manyStreams.refusals)}`,
    )
    say(`many streams on the bare SSE reference: the same ${options.streamClients} clients`)
    const bareSse = await runManyStreamsOnBareSse({
      ...manyStreamsSettings,
      runId: `${runId}-i${instances}-bare`,
    })
    const versusBareSse = compareWithBareSse(manyStreams, bareSse)
    say(
      `many streams on the bare SSE reference: ${bareSse.completed} / ${bareSse.clients} complete, ` +
        `gap p99 ${bareSse.itemGap.p99.toFixed(1)} ms (service ÷ reference ` +
        `${versusBareSse.ratio.gapP99?.toFixed(2) ?? 'n/a'}×)`,
    )
    steps.push({ instances, sendStream, manyStreams, bareSse, versusBareSse })
  }
}
