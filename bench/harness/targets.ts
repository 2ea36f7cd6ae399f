// Turns results into the list of missed targets; a non-empty list makes the
// run exit non-zero.
import type { LoadResult } from './load.ts'
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
