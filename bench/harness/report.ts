// The run's report: one JSON document (everything measured), one Markdown
// page (the tables docs/benchmarks.md quotes) and its SVG chart, written to
// bench/results/ under the run's date and commit.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { POSTGRES_POOL_SIZE } from '../../src/storage/postgres.ts'
import type { BareSseComparison } from './bare-sse-comparison.ts'
import { chartSvg } from './chart.ts'
import { type Machine, machineLine } from './machine.ts'
import type { BenchOptions } from './options.ts'
import type { PgbenchResult } from './pgbench.ts'
import { GENERATOR_MAX_CORES, type RequestResult } from './requests.ts'
import { resultName } from './result-name.ts'
import type { SendRatios, SendRound } from './sends.ts'
import type { StreamSummary } from './stream-summary.ts'
import type { ManyStreamsResult } from './streaming.ts'
import type { TargetCheck } from './targets.ts'
import { machineBound, type TurnCpu } from './turn-cpu.ts'

export const RESULTS_DIR = resolve(import.meta.dir, '../results')

export interface BenchReport {
  startedAt: string
  /** Commit measured (see result-name.ts). */
  commit: string
  backend: string
  machine: Machine
  /** 1-minute load average when the run ended: the machine is shared. */
  loadAverageAtEnd: number
  options: BenchOptions
  requests: RequestResult[]
  sendStream: StreamSummary
  /** The same sends to the stack reference: bare Bun + postgres.js running the same statements (real Postgres only). */
  sendReference: StreamSummary | undefined
  /** pgbench running the statements of one send (real Postgres only). */
  pgbench: PgbenchResult | undefined
  /** Why there is no pgbench figure, when there is none. */
  pgbenchSkipped: string | undefined
  /** Alternating rounds of sends, stack reference and pgbench; the median service ÷ pgbench round is the one reported. */
  sendRounds: SendRound[]
  /** The Redis commands of the captured turn the stack reference replays (undefined: none captured). */
  redisCommandsPerTurn: number | undefined
  /** The reported round's service ÷ pgbench, reference ÷ pgbench and service ÷ reference. */
  sendRatios: SendRatios | undefined
  /** CPU µs per turn by process in the reported round's sends, stack reference and pgbench. */
  sendCpu: { service: TurnCpu; reference: TurnCpu; pgbench: TurnCpu } | undefined
  manyStreams: ManyStreamsResult
  /** The same many-streams clients against the bare SSE server, right after. */
  bareSse: ManyStreamsResult
  /** manyStreams beside bareSse (service ÷ reference). */
  versusBareSse: BareSseComparison
  /** The service's server CPU µs per turn (median round), and ÷ the stack reference's (real Postgres only). */
  sendServerUsPerTurn: number | undefined
  sendServerCpuOfReference: number | undefined
  targets: TargetCheck[]
  /** Wrong answers; any makes the run exit non-zero. */
  failures: string[]
}

const fixed = (value: number, digits = 2) => value.toFixed(digits)
const middle = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0
const mib = (bytes: number | undefined) =>
  bytes === undefined ? 'n/a' : `${Math.round(bytes / 2 ** 20)} MiB`

const us = (value: number | undefined, digits = 1) =>
  value === undefined ? 'n/a' : `${fixed(value, digits)} µs`
const cores = (value: number | undefined) =>
  value === undefined ? 'n/a' : `${fixed(value * 100, 0)} %`

function requestTable(report: BenchReport): string[] {
  const rows = report.requests.map(({ title, bytes, saturation, openLoop, failures }) => {
    const { service, bare } = saturation
    const open = openLoop.service.latency
    const openBare = openLoop.bare.latency
    return [
      title,
      String(bytes),
      `**${us(saturation.serviceCpuUs)}** (${us(saturation.bareCpuUs)})`,
      saturation.cpuRatio === undefined ? 'n/a' : `**${fixed(saturation.cpuRatio)}×**`,
      fixed(service.rps, 0),
      fixed(bare.rps, 0),
      saturation.refused ?? `${fixed(saturation.ratio)}×`,
      cores(saturation.generatorCores),
      `${cores(middle(saturation.rounds.map((round) => round.serviceCores ?? 0)))} / ${cores(middle(saturation.rounds.map((round) => round.bareCores ?? 0)))}`,
      `${fixed(service.latency.p50)} / ${fixed(service.latency.p99)}`,
      `${openLoop.service.offeredPerSec}${openLoop.service.waitedForConnection > 0 ? ` (${openLoop.service.waitedForConnection} waited)` : ''}`,
      `${fixed(open.p50)} / ${fixed(open.p95)} / ${fixed(open.p99)} / ${fixed(open.max)}`,
      `${fixed(openBare.p50)} / ${fixed(openBare.p99)}`,
      cores(Math.max(openLoop.service.generatorCores, openLoop.bare.generatorCores)),
      failures.length === 0 ? '0' : `**${failures.length}**`,
    ].join(' | ')
  })
  return [
    '| Scenario | bytes | server CPU a request (bare route) | bare ÷ service, by CPU | req/s | bare req/s | ÷ bare, by req/s | generator, busiest round (of a core) | server / bare server CPU (of a core) | saturated p50 / p99 ms | offered req/s | open loop p50 / p95 / p99 / max ms | bare open loop p50 / p99 ms | open-loop generator (of a core) | wrong answers |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...rows.map((row) => `| ${row} |`),
  ]
}

/**
 * The headline: server CPU per unit of work against each reference's, from
 * /proc, which a noisy machine moves far less than it moves req/s.
 */
function headlineTable(report: BenchReport): string[] {
  const row = (
    what: string,
    service: number | undefined,
    reference: number | undefined,
    of: string,
    ratio: number | undefined,
  ) =>
    `| ${what} | ${us(service)} | ${us(reference)} (${of}) | ${ratio === undefined ? 'n/a' : `**${fixed(ratio)}×**`} |`
  const hits = report.requests
    .filter((result) => result.name === 'history-hit' || result.name === 'list-hit')
    .map(({ name, saturation: { serviceCpuUs, bareCpuUs } }) =>
      row(
        `${name}: per request`,
        serviceCpuUs,
        bareCpuUs,
        'bare route',
        serviceCpuUs !== undefined && bareCpuUs ? serviceCpuUs / bareCpuUs : undefined,
      ),
    )
  const reference = report.sendServerCpuOfReference
  const referenceUs =
    reference === undefined || report.sendServerUsPerTurn === undefined
      ? undefined
      : report.sendServerUsPerTurn / reference
  const items = report.versusBareSse
  return [
    '| server CPU | service | reference | service ÷ reference |',
    '|---|--:|--:|--:|',
    ...hits,
    row(
      'send + stream: per turn',
      report.sendServerUsPerTurn,
      referenceUs,
      'stack reference',
      reference,
    ),
    row(
      `many streams: per streamed item (${report.manyStreams.clients} clients, ${report.manyStreams.chunkDelayMs} ms chunks)`,
      items.service.serverCpuUsPerItem,
      items.reference.serverCpuUsPerItem,
      'bare SSE server',
      items.ratio.serverCpuPerItem,
    ),
  ]
}

function sendStreamTable(summary: StreamSummary, pgbench: PgbenchResult | undefined): string[] {
  const { timeToFirstItem: first, streamTime: whole } = summary
  const ceiling = pgbench ? fixed(pgbench.turnsPerSec, 0) : 'n/a'
  const share = pgbench
    ? `**${fixed((summary.streamsPerSec / pgbench.turnsPerSec) * 100, 0)} %**`
    : 'n/a'
  return [
    '| turns/s | pgbench turns/s | share of pgbench | complete | first item p50 / p95 / p99 ms | whole stream p50 / p99 ms | append items/s |',
    '|--:|--:|--:|--:|--:|--:|--:|',
    `| ${fixed(summary.streamsPerSec, 1)} | ${ceiling} | ${share} | ${summary.completed} / ${summary.streams} | ` +
      `${fixed(first.p50)} / ${fixed(first.p95)} / ${fixed(first.p99)} | ` +
      `${fixed(whole.p50)} / ${fixed(whole.p99)} | ${fixed(summary.itemsPerSec, 0)} |`,
  ]
}

/** Sends against both ceilings: the stack reference and pgbench, same statements a turn. */
function sendCeilingTable(report: BenchReport): string[] {
  const { sendStream, sendReference: reference, pgbench, sendRatios: ratios } = report
  if (!reference || !pgbench || !ratios) return []
  const percent = (ratio: number) => `${fixed(ratio * 100, 0)} %`
  return [
    '| turns/s of | turns/s | ÷ pgbench | service ÷ it |',
    '|---|--:|--:|--:|',
    `| service (send + stream) | ${fixed(sendStream.streamsPerSec, 1)} | **${percent(ratios.serviceOfPgbench)}** | 1.00 |`,
    `| stack reference (Bun.serve + postgres.js + ioredis) | ${fixed(reference.streamsPerSec, 1)} | **${percent(ratios.referenceOfPgbench)}** | **${fixed(ratios.serviceOfReference)}** |`,
    `| pgbench | ${fixed(pgbench.turnsPerSec, 1)} | 100 % | ${fixed(ratios.serviceOfPgbench)} |`,
  ]
}

/**
 * CPU per turn by process in the reported round, and the turns/s the
 * machine's cores bound each to: with the service's server costing nothing,
 * the rest of its turn still bounds it, whatever a server does.
 */
function sendCpuTable(report: BenchReport): string[] {
  const cpu = report.sendCpu
  const pgbench = report.pgbench
  if (!cpu || !pgbench) return []
  const { cores } = report.machine
  const us = (value: number | undefined) => (value === undefined ? 'n/a' : fixed(value, 0))
  const row = (name: string, parts: TurnCpu) => {
    const bound = machineBound(parts, cores)
    const share = bound === undefined ? 'n/a' : `${fixed((bound / pgbench.turnsPerSec) * 100, 0)} %`
    return `| ${name} | ${us(parts.server)} | ${us(parts.postgres)} | ${us(parts.redis)} | ${us(parts.clients)} | ${bound === undefined ? 'n/a' : fixed(bound, 0)} | ${share} |`
  }
  return [
    `Where a turn's CPU went in that round (µs per turn, from /proc; Postgres is every backend, Redis the whole server, clients the harness or pgbench), and the turns/s ${cores} cores allow at that cost:`,
    '',
    '| run | server | Postgres | Redis | clients | cores ÷ CPU per turn | ÷ pgbench turns/s |',
    '|---|--:|--:|--:|--:|--:|--:|',
    row('service (send + stream)', cpu.service),
    row('**the service with a server costing nothing**', { ...cpu.service, server: 0 }),
    row('stack reference (Bun.serve + postgres.js + ioredis)', cpu.reference),
    row('pgbench', cpu.pgbench),
  ]
}

function manyStreamsTable(result: ManyStreamsResult): string[] {
  const { timeToFirstItem: first, itemGap: gap } = result
  return [
    '| clients | complete | first item p50 / p95 / p99 / max ms | item gap p50 / p99 / max ms | append items/s | server RSS before → peak |',
    '|--:|--:|--:|--:|--:|--:|',
    `| ${result.clients} | ${result.completed} / ${result.clients} | ` +
      `${fixed(first.p50)} / ${fixed(first.p95)} / ${fixed(first.p99)} / ${fixed(first.max)} | ` +
      `${fixed(gap.p50)} / ${fixed(gap.p99)} / ${fixed(gap.max)} | ${fixed(result.itemsPerSec, 0)} | ` +
      `${mib(result.rssBeforeBytes)} → ${mib(result.rssPeakBytes)} |`,
  ]
}

/** Where a missed target's account is kept: it outlives one run's figures, so the report points to it. */
export const MISSED_TARGETS_ACCOUNT =
  'A missed target is accounted for in docs/benchmarks.md, "Latest figures": where the CPU goes (profiles), what was tried and measured, and why the next step is not taken.'

export function targetTable(checks: readonly TargetCheck[]): string[] {
  const verdict = (met: boolean | undefined) =>
    met === undefined ? 'n/a' : met ? 'met' : '**missed**'
  return [
    '| Target | Measured | |',
    '|---|---|---|',
    ...checks.map((check) => `| ${check.target} | ${check.measured} | ${verdict(check.met)} |`),
    ...(checks.some((check) => check.met === false) ? ['', MISSED_TARGETS_ACCOUNT] : []),
  ]
}

export function toMarkdown(report: BenchReport, chartFile?: string): string {
  const { options } = report
  const pgbench = report.pgbench
  return [
    `## Benchmark: ${report.backend}${options.short ? ' (short run)' : ''}, ${report.startedAt}, commit ${report.commit}`,
    '',
    `Machine: ${machineLine(report.machine)}; ${fixed(report.loadAverageAtEnd)} at the end.`,
    '',
    ...(chartFile
      ? [`![req/s against the reference, and latency at a fixed rate](${chartFile})`, '']
      : []),
    ...headlineTable(report),
    '',
    ...targetTable(report.targets),
    '',
    "The server runs the default configuration's plugins (access log at info, metrics, CORS for any " +
      'origin, both rate limits counting, set too high to refuse).',
    '',
    `Request scenarios, each against a bare Elysia route (a separate process started by the harness) ` +
      `answering a fixed JSON of the same size, measured just before it: saturated = ${report.machine.generator ?? 'autocannon'}, ` +
      `${options.connections} connections, 3 alternating rounds (bare, service) of ${Math.max(1, Math.round(options.durationSec / 3))} s after a ` +
      `${Math.max(1, Math.round(options.warmupSec))} s warm-up each, the median round shown, with the server process's CPU per request ` +
      `(median over the rounds) and the generator's own CPU: a req/s ratio is refused when the generator ran above ` +
      `${GENERATOR_MAX_CORES * 100} % of a core in any round (it may then be what limits the req/s); ` +
      `open loop = a fixed offered rate (--rate ${options.ratePerSec} req/s, or half the scenario's saturated ` +
      `rate when lower) for ${options.openLoopSec} s over 64 connections, one request at a time each, latency from write to whole response.`,
    '',
    ...requestTable(report),
    '',
    `Send + stream: ${options.streamConcurrency} clients in a closed loop, one new conversation per send, ` +
      'local model without chunk delay; pgbench: the statements of one such send captured from the service' +
      `${pgbench ? ` (${pgbench.statementsPerTurn} a turn, prepared)` : ''}, ${options.streamConcurrency} clients; ` +
      'stack reference: a bare Bun.serve + postgres.js + ioredis server (bare-sends-server.ts) running those statements per request ' +
      `(prepared, pool of ${POSTGRES_POOL_SIZE} as the service's)` +
      `${report.redisCommandsPerTurn ? ` and the ${report.redisCommandsPerTurn} Redis commands the same send made (its turn state and cache, captured with MONITOR; one pipeline a database)` : ''}` +
      ' and answering the captured reply whole, driven by the same clients; ' +
      `alternating rounds, the median service ÷ pgbench shown${report.sendRounds.length > 0 ? ` (rounds, service / reference / pgbench: ${report.sendRounds.map((round) => `${round.turnsPerSec.toFixed(0)} / ${round.referenceTurnsPerSec.toFixed(0)} / ${round.pgbenchTurnsPerSec.toFixed(0)}`).join(', ')} turns/s)` : ''}.` +
      `${report.pgbenchSkipped ? ` No pgbench or stack reference: ${report.pgbenchSkipped}.` : ''}`,
    '',
    ...sendStreamTable(report.sendStream, pgbench),
    '',
    ...(report.sendRatios ? [...sendCeilingTable(report), ''] : []),
    ...(report.sendCpu ? [...sendCpuTable(report), ''] : []),
    `Many streams: ${report.manyStreams.clients} clients started over ${options.streamRampMs} ms, ` +
      `one message each, local model at ${report.manyStreams.chunkDelayMs} ms per chunk, fresh server.`,
    '',
    ...manyStreamsTable(report.manyStreams),
    '',
    'The same clients against the bare SSE server (bench/harness/bare-sse-server.ts: the same items at the same pace ' +
      'from a timer per stream, no database, Redis or turn log):',
    '',
    ...manyStreamsTable(report.bareSse),
    '',
    report.failures.length === 0
      ? 'No wrong answers.'
      : ['Wrong answers:', ...report.failures.map((failure) => `- ${failure}`)].join('\n'),
    '',
  ].join('\n')
}

/** Writes `<date>-<commit>-<backend>[-short].{json,md,svg}` (never overwriting a run); returns the paths. */
export function writeReport(report: BenchReport): { json: string; markdown: string; svg: string } {
  mkdirSync(RESULTS_DIR, { recursive: true })
  const name = `${resultName(new Date(report.startedAt), report.commit)}-${report.backend}${report.options.short ? '-short' : ''}`
  const base = join(RESULTS_DIR, name)
  const paths = { json: `${base}.json`, markdown: `${base}.md`, svg: `${base}.svg` }
  writeFileSync(paths.json, `${JSON.stringify(report, null, 2)}\n`)
  writeFileSync(
    paths.svg,
    chartSvg(
      `${report.backend}, ${report.startedAt}, ${report.commit}`,
      report.requests,
      report.sendRatios,
    ),
  )
  writeFileSync(paths.markdown, toMarkdown(report, `${name}.svg`))
  return paths
}
