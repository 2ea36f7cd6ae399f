// The report of `bun run bench --scale`: one JSON document and one Markdown
// page, bench/results/<backend>-scale.{json,md} (the latest run per backend).
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { BareSseComparison, StreamFigures } from './bare-sse-comparison.ts'
import type { CpuUse } from './cpu.ts'
import { type Machine, machineLine } from './machine.ts'
import type { BenchOptions } from './options.ts'
import type { PoolActivity } from './pg-activity.ts'
import type { RedisDelta } from './redis-stats.ts'
import { describeRefusals, describeRefusalsWithReasons } from './refusals.ts'
import { RESULTS_DIR, targetTable } from './report.ts'
import { resultName } from './result-name.ts'
import type { ScaleStep } from './scale.ts'
import type { Summary } from './stats.ts'
import type { StreamSummary } from './stream-summary.ts'
import type { TimelineSecond } from './streaming.ts'
import type { TargetCheck } from './targets.ts'

export interface ScaleReport {
  startedAt: string
  backend: string
  machine: Machine
  options: BenchOptions
  steps: ScaleStep[]
  /** Targets of every step, met / missed. */
  targets: TargetCheck[]
  /** Wrong answers (incomplete streams); any makes the run exit non-zero. */
  failures: string[]
}

const fixed = (value: number, digits = 0) =>
  value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
const mib = (bytes: number | undefined) =>
  bytes === undefined ? 'n/a' : `${Math.round(bytes / 2 ** 20)} MiB`
const percent = (fraction: number | undefined) =>
  fraction === undefined ? 'n/a' : `${Math.round(fraction * 100)} %`

function mainTable(steps: ScaleStep[]): string[] {
  const rows = steps.map(({ instances, sendStream: send, manyStreams: many }) => {
    const first = many.timeToFirstItem
    const gap = many.itemGap
    return [
      String(instances),
      many.routing,
      `${fixed(send.streamsPerSec)} (${fixed(send.completed)} / ${fixed(send.streams)})`,
      `${fixed(many.completed)} / ${fixed(many.clients)}`,
      `${fixed(many.peakOpen)} / ${fixed(many.peakStreaming)}`,
      fixed(many.turnsPerSec),
      `${fixed(first.p50)} / ${fixed(first.p95)} / ${fixed(first.p99)}`,
      `${fixed(gap.p50, 1)} / ${fixed(gap.p99, 1)} / ${fixed(gap.max)}`,
      fixed(many.itemsPerSec),
      many.servers.map((s) => `${mib(s.rssBeforeBytes)} → ${mib(s.rssPeakBytes)}`).join(', '),
      percent(many.cpu.machineBusy),
    ].join(' | ')
  })
  return [
    '| instances | routing | send + stream turns/s (complete) | many streams complete | peak open / streaming | many streams turns/s | first item p50 / p95 / p99 ms | item gap p50 / p99 / max ms | append items/s | server RSS before → peak | machine CPU busy |',
    '|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    ...rows.map((row) => `| ${row} |`),
  ]
}

const times = (ratio: number | undefined) => (ratio === undefined ? 'n/a' : `${fixed(ratio, 2)}×`)
const optional = (value: number | undefined, digits = 0) =>
  value === undefined ? 'n/a' : fixed(value, digits)

function figuresRow(instances: number, run: string, figures: StreamFigures): string {
  return [
    String(instances),
    run,
    `${fixed(figures.completed)} / ${fixed(figures.clients)}`,
    `${fixed(figures.firstItemP50Ms)} / ${fixed(figures.firstItemP99Ms)}`,
    `${fixed(figures.gapP50Ms, 1)} / ${fixed(figures.gapP99Ms, 1)}`,
    fixed(figures.itemsPerSec),
    optional(figures.serverCpuUsPerItem, 1),
    mib(figures.rssPeakBytes),
    percent(figures.machineBusy),
  ].join(' | ')
}

function ratioRow(instances: number, { ratio }: BareSseComparison): string {
  return [
    String(instances),
    '**service ÷ reference**',
    '',
    `${times(ratio.firstItemP50)} / ${times(ratio.firstItemP99)}`,
    `${times(ratio.gapP50)} / **${times(ratio.gapP99)}**`,
    times(ratio.itemsPerSec),
    times(ratio.serverCpuPerItem),
    times(ratio.rssPeak),
    '',
  ].join(' | ')
}

/** Per instance count: the service's many streams, the bare SSE reference's, and service ÷ reference. */
function bareSseTable(steps: ScaleStep[]): string[] {
  const rows = steps.flatMap(({ instances, versusBareSse }) => [
    figuresRow(instances, 'service', versusBareSse.service),
    figuresRow(instances, 'bare SSE reference (1 instance)', versusBareSse.reference),
    ratioRow(instances, versusBareSse),
  ])
  return [
    '| instances | run | complete | first item p50 / p99 ms | item gap p50 / p99 ms | append items/s | server CPU µs per append item | server peak RSS | machine CPU busy |',
    '|--:|---|--:|--:|--:|--:|--:|--:|--:|',
    ...rows.map((row) => `| ${row} |`),
  ]
}

function cpuLine(
  label: string,
  cpu: { wallSec: number; machineBusy: number | undefined; uses: CpuUse[] },
  cores: number,
): string {
  const uses = cpu.uses.map((use) => `${use.name} ${fixed(use.cores, 2)}`)
  if (cpu.machineBusy !== undefined) {
    const busy = cpu.machineBusy * cores
    const measured = cpu.uses.reduce((sum, use) => sum + use.cores, 0)
    uses.push(
      `rest of the machine ${fixed(Math.max(0, busy - measured), 2)}`,
      `**machine ${fixed(busy, 2)} of ${cores}**`,
    )
  }
  return `- ${label} (cores busy on average over ${fixed(cpu.wallSec, 1)} s): ${uses.join(', ')}`
}

/** `server 1 running` + `server 1 waiting` → `server 1 62 % + 34 %`. */
function waitLine(label: string, readings: CpuUse[]): string {
  const byProcess = new Map<string, { running?: number; waiting?: number }>()
  for (const reading of readings) {
    const match = /^(.*) (running|waiting)$/.exec(reading.name)
    if (!match?.[1] || !match[2]) continue
    const entry = byProcess.get(match[1]) ?? {}
    entry[match[2] as 'running' | 'waiting'] = reading.cores
    byProcess.set(match[1], entry)
  }
  const parts = [...byProcess].map(
    ([name, { running, waiting }]) => `${name} ${percent(running)} + ${percent(waiting)}`,
  )
  return `- ${label}: ${parts.join(', ') || 'not measured'}`
}

function command(delta: RedisDelta, name: string): number {
  return delta.commands.find((entry) => entry.command === name)?.calls ?? 0
}

/** A scenario's Redis counters, with the turns and items they served. */
type RedisScenario = Pick<StreamSummary, 'appendItems' | 'completed'> & { redis?: RedisDelta }

/** A scenario's row, or none when it had no Redis state. */
function redisRows(instances: number, scenario: string, run: RedisScenario): string[] {
  const { redis: delta, appendItems: items, completed: turns } = run
  if (!delta) return []
  const top = delta.commands
    .slice(0, 6)
    .map(
      (entry) =>
        `${entry.command} ${fixed(entry.calls)} (${fixed(entry.usec / entry.calls, 1)} µs)`,
    )
    .join(', ')
  const row = [
    String(instances),
    scenario,
    fixed(items),
    fixed(command(delta, 'evalsha')),
    turns > 0 ? fixed(delta.readEvents / turns, 1) : 'n/a',
    items > 0 ? fixed(delta.readEvents / items, 2) : 'n/a',
    items > 0 ? fixed(delta.totalCommands / items, 2) : 'n/a',
    fixed(delta.cpuSeconds, 1),
    top,
  ].join(' | ')
  return [row]
}

function redisTable(steps: ScaleStep[]): string[] {
  const rows = steps.flatMap(({ instances, sendStream, manyStreams }) => [
    ...redisRows(instances, 'send + stream', sendStream),
    ...redisRows(instances, 'many streams', manyStreams),
  ])
  if (rows.length === 0) return ['No Redis state: turn logs were in process.']
  return [
    '| instances | scenario | append items (client-seen) | EVALSHA | Redis round trips (read events) per turn | the same per append item | Redis commands per append item | Redis CPU s | most called (µs per call) |',
    '|--:|---|--:|--:|--:|--:|--:|--:|---|',
    ...rows.map((row) => `| ${row} |`),
  ]
}

function poolLine(label: string, pools: PoolActivity | undefined): string {
  if (!pools) return `- ${label}: not measured`
  const waits = Object.entries(pools.waits)
    .map(([wait, count]) => `${wait} ${fixed(count / pools.samples, 2)}`)
    .join(', ')
  return (
    `- ${label}: ${pools.connections} connections seen, on average ${fixed(pools.meanActive, 1)} ` +
    `active + ${fixed(pools.meanIdleInTransaction, 1)} idle in a transaction; all busy in ` +
    `${percent(pools.allBusyFraction)} of ${fixed(pools.samples)} samples` +
    (waits ? `; active connections waiting (mean count): ${waits}` : '')
  )
}

function timelineTable(title: string, timeline: TimelineSecond[]): string[] {
  return [
    `${title}:`,
    '',
    '| s | sent | first items | ended | open | append items | gap p99 ms |',
    '|--:|--:|--:|--:|--:|--:|--:|',
    ...timeline.map(
      (row) =>
        `| ${row.second} | ${row.sent} | ${row.firstItems} | ${row.ended} | ${row.open} | ` +
        `${fixed(row.items)} | ${fixed(row.gapP99Ms)} |`,
    ),
    '',
  ]
}

const lagOf = (lags: Summary[]) =>
  lags.map((lag) => `${fixed(lag.p99, 1)} / ${fixed(lag.max)}`).join(', ')

export function toScaleMarkdown(report: ScaleReport): string {
  const { options, steps } = report
  const perSecond = options.streamClients / Math.max(1, options.streamRampMs / 1000)
  return [
    `## Scale benchmark: ${report.backend}, ${report.startedAt}`,
    '',
    `Machine: ${machineLine(report.machine)}.`,
    '',
    ...targetTable(report.targets),
    '',
    `Per instance count, each on a fresh deployment: send + stream, ${options.streamConcurrency} clients ` +
      `in a closed loop for ${options.durationSec} s, one new conversation per send, local model ` +
      `without delay; then many streams, ${fixed(options.streamClients)} clients started over ` +
      `${options.streamRampMs / 1000} s (${fixed(perSecond)} sends/s), one ${options.streamWords}-word ` +
      `message each, local model at ${options.chunkDelayMs} ms per chunk, clients split over ` +
      `${options.clientProcesses} process(es). "Peak open" counts requests in flight at once, ` +
      '"streaming" those between their first append item and their end; many streams turns/s is ' +
      'first items per second from the first to the last.',
    '',
    ...mainTable(steps),
    '',
    options.cpuHog
      ? 'Beside a CPU hog: one process spinning on one core for the whole run (`--cpu-hog`).'
      : 'No CPU hog (`--cpu-hog` runs these beside a process spinning on one core).',
    '',
    'Sends refused, by code (`overloaded`: shed by admission control or a store deadline missed ' +
      'while the server lagged; `state_unavailable`: the turn state taken for unavailable):',
    '',
    ...steps.flatMap(({ instances, sendStream, manyStreams }) => [
      `- ${instances} instance(s), send + stream: ${describeRefusals(sendStream.refusals)}`,
      `- ${instances} instance(s), many streams: ${describeRefusalsWithReasons(manyStreams.refusals, manyStreams.overloadReasons)}`,
    ]),
    '',
    'Many streams against the bare SSE reference: right after each many-streams run, the same ' +
      'clients (count, ramp, message, client processes) against a minimal Elysia app ' +
      '(bench/harness/bare-sse-server.ts, its own process, one instance) that answers the same POST ' +
      "with the same SSE items, one append item per chunk of the local model's reply at the same " +
      'pace, from a timer per stream, with no database, Redis or turn log. Gaps include the ' +
      `${options.chunkDelayMs} ms pace itself; server CPU is every server process's, over the append ` +
      'items the clients received.',
    '',
    ...bareSseTable(steps),
    '',
    'Where the CPU went:',
    '',
    ...steps.flatMap(({ instances, sendStream, manyStreams, bareSse }) => [
      cpuLine(`${instances} instance(s), send + stream`, sendStream.cpu, report.machine.cores),
      cpuLine(`${instances} instance(s), many streams`, manyStreams.cpu, report.machine.cores),
      cpuLine(`${instances} instance(s), bare SSE reference`, bareSse.cpu, report.machine.cores),
    ]),
    '',
    'Main threads (event loops): share of the scenario running on a CPU + waiting for one while ' +
      'runnable (from /proc/<pid>/schedstat; a sum near 100 % means the loop never idles):',
    '',
    ...steps.flatMap(({ instances, sendStream, manyStreams, bareSse }) => [
      waitLine(`${instances} instance(s), send + stream`, sendStream.runQueue),
      waitLine(`${instances} instance(s), many streams`, manyStreams.runQueue),
      waitLine(`${instances} instance(s), bare SSE reference`, bareSse.runQueue),
    ]),
    '',
    'Event-loop lag of the client processes during many streams (p99 / max ms): ' +
      steps
        .map(
          ({ instances, manyStreams, bareSse }) =>
            `${instances} instance(s): ${lagOf(manyStreams.clientLoopLag)} ` +
            `(bare SSE reference: ${lagOf(bareSse.clientLoopLag)})`,
        )
        .join('; ') +
      '.',
    '',
    'Redis (state database server, counters server-wide):',
    '',
    ...redisTable(steps),
    '',
    'Postgres pools of the servers (10 connections each), sampled every 100 ms:',
    '',
    ...steps.flatMap(({ instances, sendStream, manyStreams }) => [
      poolLine(`${instances} instance(s), send + stream`, sendStream.pools),
      poolLine(`${instances} instance(s), many streams`, manyStreams.pools),
    ]),
    '',
    report.failures.length === 0
      ? 'No wrong answers: every stream completed.'
      : ['Wrong answers:', ...report.failures.map((failure) => `- ${failure}`)].join('\n'),
    '',
    '### Many streams, second by second',
    '',
    'From the start of the ramp; "open" is requests in flight at the end of the second.',
    '',
    ...steps.flatMap(({ instances, manyStreams, bareSse }) => [
      ...timelineTable(`${instances} instance(s)`, manyStreams.timeline),
      ...timelineTable(`Bare SSE reference, beside ${instances} instance(s)`, bareSse.timeline),
    ]),
  ].join('\n')
}

/** Writes `<backend>-scale.json` and `.md`; returns their paths. */
export function writeScaleReport(report: ScaleReport): { json: string; markdown: string } {
  mkdirSync(RESULTS_DIR, { recursive: true })
  const base = join(
    RESULTS_DIR,
    `${resultName(new Date(report.startedAt))}-${report.backend}-scale`,
  )
  const paths = { json: `${base}.json`, markdown: `${base}.md` }
  writeFileSync(paths.json, `${JSON.stringify(report, null, 2)}\n`)
  writeFileSync(paths.markdown, toScaleMarkdown(report))
  return paths
}
