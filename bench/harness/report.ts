// The run's report: one JSON document (everything measured) and one Markdown
// page (the tables the README quotes), both written to bench/results/.
import { mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { type Machine, machineLine } from './machine.ts'
import type { BenchOptions } from './options.ts'
import type { RequestResult } from './requests.ts'
import type { StreamSummary } from './stream-summary.ts'
import type { ManyStreamsResult } from './streaming.ts'

export const RESULTS_DIR = resolve(import.meta.dir, '../results')

export interface BenchReport {
  startedAt: string
  backend: string
  machine: Machine
  options: BenchOptions
  requests: RequestResult[]
  sendStream: StreamSummary
  manyStreams: ManyStreamsResult
  failures: string[]
}

const fixed = (value: number, digits = 2) => value.toFixed(digits)
const mib = (bytes: number | undefined) =>
  bytes === undefined ? 'n/a' : `${Math.round(bytes / 2 ** 20)} MiB`

function requestTable(report: BenchReport): string[] {
  const ratio = (value: number, reference: number) =>
    reference === 0 ? 'n/a' : `${fixed(value / reference)}×`
  const rows = report.requests.map(({ title, target, load, health, failures }) =>
    [
      title,
      fixed(load.rps, 0),
      fixed(load.latency.p50),
      fixed(load.latency.p95),
      fixed(load.latency.p99),
      fixed(load.latency.max),
      String(load.non2xx + load.errors),
      `${fixed(health.rps, 0)} / ${fixed(health.latency.p99)}`,
      ratio(load.rps, health.rps),
      ratio(load.latency.p99, health.latency.p99),
      target,
      failures.length === 0 ? 'met' : '**missed**',
    ].join(' | '),
  )
  return [
    '| Scenario | req/s | p50 ms | p95 ms | p99 ms | max ms | non-2xx + errors | /health req/s / p99 ms | req/s ÷ health | p99 ÷ health | Target | |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|---|',
    ...rows.map((row) => `| ${row} |`),
  ]
}

function sendStreamTable(summary: StreamSummary): string[] {
  const { timeToFirstItem: first, streamTime: whole } = summary
  return [
    '| streams/s | complete | first item p50 / p95 / p99 ms | whole stream p50 / p99 ms | append items/s |',
    '|--:|--:|--:|--:|--:|',
    `| ${fixed(summary.streamsPerSec, 1)} | ${summary.completed} / ${summary.streams} | ` +
      `${fixed(first.p50)} / ${fixed(first.p95)} / ${fixed(first.p99)} | ` +
      `${fixed(whole.p50)} / ${fixed(whole.p99)} | ${fixed(summary.itemsPerSec, 0)} |`,
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

export function toMarkdown(report: BenchReport): string {
  const { options } = report
  return [
    `## Benchmark: ${report.backend}${options.short ? ' (short run)' : ''}, ${report.startedAt}`,
    '',
    `Machine: ${machineLine(report.machine)}.`,
    '',
    `Request scenarios: autocannon, ${options.connections} connections, ${options.durationSec} s each ` +
      `after a ${options.warmupSec} s warm-up, against the server on 127.0.0.1; each paired with ` +
      'GET /health measured the same way just before it.',
    '',
    ...requestTable(report),
    '',
    `Send + stream: ${options.streamConcurrency} clients in a closed loop for ${options.durationSec} s, ` +
      'one new conversation per send, local model without chunk delay.',
    '',
    ...sendStreamTable(report.sendStream),
    '',
    `Many streams: ${report.manyStreams.clients} clients started over ${options.streamRampMs} ms, ` +
      `one message each, local model at ${report.manyStreams.chunkDelayMs} ms per chunk, fresh server.`,
    '',
    ...manyStreamsTable(report.manyStreams),
    '',
    report.failures.length === 0
      ? 'All targets met.'
      : ['Missed targets:', ...report.failures.map((failure) => `- ${failure}`)].join('\n'),
    '',
  ].join('\n')
}

/** Writes `<backend>[-short].json` and `.md`; returns their paths. */
export function writeReport(report: BenchReport): { json: string; markdown: string } {
  mkdirSync(RESULTS_DIR, { recursive: true })
  const base = join(RESULTS_DIR, `${report.backend}${report.options.short ? '-short' : ''}`)
  const paths = { json: `${base}.json`, markdown: `${base}.md` }
  writeFileSync(paths.json, `${JSON.stringify(report, null, 2)}\n`)
  writeFileSync(paths.markdown, toMarkdown(report))
  return paths
}
