// What a run is judged by: wrong answers (non-2xx, errors, incomplete streams)
// make it exit non-zero; the performance targets are printed met / missed.
import type { PgbenchResult } from './pgbench.ts'
import type { RequestResult } from './requests.ts'
import type { ScaleStep } from './scale.ts'
import type { StreamSummary } from './stream-summary.ts'
import type { ManyStreamsResult } from './streaming.ts'

const ms = (value: number) => `${value.toFixed(2)} ms`

/** Issue 9's performance targets: printed met / missed, never a reason to fail the run. */
export const TARGETS = {
  /** History and list hits: at least this share of the bare route's req/s at saturation. */
  minHitRatio: 0.75,
  /** History hit p99 below this at OPEN_LOOP_RATE req/s offered. */
  maxHistoryP99Ms: 2,
  openLoopRate: 5_000,
  /** Sends: at least this share of pgbench running the same statements. */
  minShareOfPgbench: 0.7,
} as const

export interface TargetCheck {
  target: string
  measured: string
  /** undefined: not measured in this run (e.g. no pgbench on an embedded database). */
  met: boolean | undefined
}

export function targetChecks(
  requests: readonly RequestResult[],
  sendStream: StreamSummary,
  pgbench: PgbenchResult | undefined,
  /** The sends' stack reference (bare Bun + postgres.js), shown beside the target for scale. */
  sendReference?: StreamSummary,
): TargetCheck[] {
  const checks: TargetCheck[] = []
  for (const name of ['history-hit', 'list-hit']) {
    const result = requests.find((entry) => entry.name === name)
    checks.push({
      target: `${name} ≥ ${TARGETS.minHitRatio}× the bare route's req/s`,
      measured: result
        ? `${result.saturation.ratio.toFixed(2)}× (${result.saturation.service.rps.toFixed(0)} / ${result.saturation.bare.rps.toFixed(0)} req/s)`
        : 'not run',
      met: result ? result.saturation.ratio >= TARGETS.minHitRatio : undefined,
    })
  }
  const history = requests.find((entry) => entry.name === 'history-hit')
  const open = history?.openLoop.service
  const atRate = open !== undefined && open.offeredPerSec >= TARGETS.openLoopRate
  checks.push({
    target: `history-hit p99 < ${TARGETS.maxHistoryP99Ms} ms at ${TARGETS.openLoopRate} req/s offered`,
    measured: open
      ? `${ms(open.latency.p99)} at ${open.offeredPerSec} req/s (bare route: ${ms(history?.openLoop.bare.latency.p99 ?? 0)})`
      : 'not run',
    met: open && atRate ? open.latency.p99 < TARGETS.maxHistoryP99Ms : undefined,
  })
  checks.push({
    target: `sends ≥ ${TARGETS.minShareOfPgbench * 100} % of pgbench running the same statements`,
    measured: pgbench
      ? `${((sendStream.streamsPerSec / pgbench.turnsPerSec) * 100).toFixed(0)} % (${sendStream.streamsPerSec.toFixed(0)} / ${pgbench.turnsPerSec.toFixed(0)} turns/s)` +
        (sendReference
          ? `; the stack reference reaches ${((sendReference.streamsPerSec / pgbench.turnsPerSec) * 100).toFixed(0)} %`
          : '')
      : 'no pgbench ceiling (embedded database, or pgbench missing)',
    met: pgbench
      ? sendStream.streamsPerSec / pgbench.turnsPerSec >= TARGETS.minShareOfPgbench
      : undefined,
  })
  return checks
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

/** The scale run's targets (the issue's): see docs/benchmarks.md "At scale: many streams". */
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
