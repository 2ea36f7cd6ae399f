// Turns results into the list of missed targets; a non-empty list makes the
// run exit non-zero.
import type { LoadResult } from './load.ts'
import type { ScaleStep } from './scale.ts'
import type { Target } from './scenarios.ts'
import type { StreamSummary } from './stream-summary.ts'
import type { ManyStreamsResult } from './streaming.ts'

const ms = (value: number) => `${value.toFixed(2)} ms`

export function describeTarget(target: Target): string {
  const parts = [
    target.p95Ms === undefined ? undefined : `p95 < ${target.p95Ms} ms`,
    target.p99Ms === undefined ? undefined : `p99 < ${target.p99Ms} ms`,
    'all 2xx',
  ]
  return parts.filter((part) => part !== undefined).join(', ')
}

export function requestFailures(name: string, target: Target, load: LoadResult): string[] {
  const failures: string[] = []
  if (load.requests === 0) failures.push(`${name}: no response at all`)
  if (load.non2xx > 0) failures.push(`${name}: ${load.non2xx} non-2xx responses`)
  if (load.errors > 0) failures.push(`${name}: ${load.errors} connection errors or timeouts`)
  if (target.p95Ms !== undefined && load.latency.p95 >= target.p95Ms)
    failures.push(`${name}: p95 ${ms(load.latency.p95)} ≥ ${target.p95Ms} ms`)
  if (target.p99Ms !== undefined && load.latency.p99 >= target.p99Ms)
    failures.push(`${name}: p99 ${ms(load.latency.p99)} ≥ ${target.p99Ms} ms`)
  return failures
}

export function sendStreamFailures(summary: StreamSummary): string[] {
  if (summary.streams === 0) return ['send-stream: no stream was sent']
  if (summary.completed === summary.streams) return []
  const why = summary.errors.length > 0 ? ` (${summary.errors.join('; ')})` : ''
  return [
    `send-stream: ${summary.streams - summary.completed} of ${summary.streams} streams incomplete${why}`,
  ]
}

export function manyStreamsFailures(result: ManyStreamsResult): string[] {
  if (result.completed >= result.clients) return []
  const why = result.errors.length > 0 ? ` (${result.errors.join('; ')})` : ''
  return [`many-streams: ${result.completed} of ${result.clients} streams completed${why}`]
}

/** The scale run's targets (the issue's): see README "Many streams on Redis turn logs". */
export const SCALE_TARGETS = {
  /** Send + stream must admit at least this many turns a second (today's, before the Redis logs). */
  minTurnsPerSec: 250,
  /** p99 of the gaps between a stream's append items. */
  maxGapP99Ms: 200,
  /** Peak RSS of every server. */
  maxRssBytes: 2 ** 30,
} as const

export function scaleFailures(step: ScaleStep): string[] {
  const where = step.instances === 1 ? '1 instance' : `${step.instances} instances`
  const { sendStream, manyStreams } = step
  const failures = sendStreamFailures(sendStream).map((failure) => `${where}: ${failure}`)
  if (sendStream.streamsPerSec < SCALE_TARGETS.minTurnsPerSec)
    failures.push(
      `${where}: send-stream ${sendStream.streamsPerSec.toFixed(0)} turns/s < ${SCALE_TARGETS.minTurnsPerSec}`,
    )
  failures.push(...manyStreamsFailures(manyStreams).map((failure) => `${where}: ${failure}`))
  if (manyStreams.itemGap.p99 >= SCALE_TARGETS.maxGapP99Ms)
    failures.push(
      `${where}: many-streams item gap p99 ${ms(manyStreams.itemGap.p99)} ≥ ${SCALE_TARGETS.maxGapP99Ms} ms`,
    )
  manyStreams.servers.forEach((server, index) => {
    if (server.rssPeakBytes !== undefined && server.rssPeakBytes >= SCALE_TARGETS.maxRssBytes)
      failures.push(
        `${where}: server ${index + 1} peak RSS ${Math.round(server.rssPeakBytes / 2 ** 20)} MiB ≥ 1 GiB`,
      )
  })
  return failures
}
