// The run's chart, an SVG beside the Markdown report, so a regression shows at
// a glance: on the left each scenario's req/s as a share of its reference (the
// bare route; pgbench for sends, and the sends' stack reference against both)
// with the target marked; on the right the latency percentiles at a fixed
// offered rate, on a log scale, the bare route's beside the service's.
import type { RequestResult } from './requests.ts'
import type { SendRatios } from './sends.ts'
import { TARGETS } from './targets.ts'

const ROW = 34
const TOP = 56
const LEFT_LABEL = 150
const BAR_WIDTH = 260
const RIGHT_X = LEFT_LABEL + BAR_WIDTH + 70
const LAT_WIDTH = 360
const MIN_MS = 0.05
const MAX_MS = 200

const escapeXml = (text: string) =>
  text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')

function text(x: number, y: number, content: string, attrs = ''): string {
  return `<text x="${x.toFixed(1)}" y="${y.toFixed(1)}" ${attrs}>${escapeXml(content)}</text>`
}

/** x of a latency on the log axis. */
function latencyX(ms: number): number {
  const clamped = Math.min(MAX_MS, Math.max(MIN_MS, ms))
  const share =
    (Math.log10(clamped) - Math.log10(MIN_MS)) / (Math.log10(MAX_MS) - Math.log10(MIN_MS))
  return RIGHT_X + share * LAT_WIDTH
}

interface Row {
  label: string
  ratio: number | undefined
  target: number | undefined
  service?: { p50: number; p95: number; p99: number; offered: number }
  bare?: { p50: number; p99: number }
}

export function chartSvg(
  title: string,
  requests: readonly RequestResult[],
  sendRatios: SendRatios | undefined,
): string {
  const rows: Row[] = requests.map((result) => ({
    label: result.name,
    ratio: result.saturation.ratio,
    target: ['history-hit', 'list-hit'].includes(result.name) ? TARGETS.minHitRatio : undefined,
    service: {
      p50: result.openLoop.service.latency.p50,
      p95: result.openLoop.service.latency.p95,
      p99: result.openLoop.service.latency.p99,
      offered: result.openLoop.service.offeredPerSec,
    },
    bare: { p50: result.openLoop.bare.latency.p50, p99: result.openLoop.bare.latency.p99 },
  }))
  rows.push(
    {
      label: 'sends ÷ pgbench',
      ratio: sendRatios?.serviceOfPgbench,
      target: TARGETS.minShareOfPgbench,
    },
    { label: 'stack ref ÷ pgbench', ratio: sendRatios?.referenceOfPgbench, target: undefined },
    { label: 'sends ÷ stack ref', ratio: sendRatios?.serviceOfReference, target: undefined },
  )
  const height = TOP + rows.length * ROW + 40
  const width = RIGHT_X + LAT_WIDTH + 110
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    text(10, 20, title, 'font-size="14" font-weight="bold"'),
    text(
      LEFT_LABEL,
      42,
      'req/s ÷ reference (bare route; pgbench, stack ref for sends), saturation',
    ),
    text(RIGHT_X, 42, 'latency at a fixed offered rate, ms (log): ● p50 ◆ p95 ■ p99, ○ □ bare'),
  ]
  // Ratio axis: 0 to 1.25.
  const ratioX = (ratio: number) =>
    LEFT_LABEL + (Math.min(1.25, Math.max(0, ratio)) / 1.25) * BAR_WIDTH
  for (const tick of [0, 0.25, 0.5, 0.75, 1, 1.25]) {
    const x = ratioX(tick)
    parts.push(
      `<line x1="${x}" y1="${TOP - 6}" x2="${x}" y2="${TOP + rows.length * ROW}" stroke="#ddd"/>`,
    )
    parts.push(
      text(x - 8, TOP + rows.length * ROW + 16, tick.toFixed(2), 'fill="#666" font-size="10"'),
    )
  }
  for (const tick of [0.1, 1, 10, 100]) {
    const x = latencyX(tick)
    parts.push(
      `<line x1="${x}" y1="${TOP - 6}" x2="${x}" y2="${TOP + rows.length * ROW}" stroke="#ddd"/>`,
    )
    parts.push(
      text(x - 8, TOP + rows.length * ROW + 16, String(tick), 'fill="#666" font-size="10"'),
    )
  }
  rows.forEach((row, index) => {
    const y = TOP + index * ROW
    parts.push(text(10, y + 16, row.label))
    if (row.ratio !== undefined) {
      const missed = row.target !== undefined && row.ratio < row.target
      const colour = row.target === undefined ? '#7a8ca3' : missed ? '#d1495b' : '#2e9e5b'
      parts.push(
        `<rect x="${LEFT_LABEL}" y="${y + 4}" width="${(ratioX(row.ratio) - LEFT_LABEL).toFixed(1)}" height="${ROW - 12}" fill="${colour}"/>`,
      )
      parts.push(text(ratioX(row.ratio) + 4, y + 17, `${row.ratio.toFixed(2)}×`, 'font-size="11"'))
    } else parts.push(text(LEFT_LABEL + 4, y + 17, 'not measured', 'fill="#999"'))
    if (row.target !== undefined) {
      const x = ratioX(row.target)
      parts.push(
        `<line x1="${x}" y1="${y + 1}" x2="${x}" y2="${y + ROW - 5}" stroke="black" stroke-dasharray="3,2"/>`,
      )
    }
    if (row.service && row.bare) {
      const mid = y + ROW / 2 - 2
      const { service, bare } = row
      parts.push(
        `<line x1="${latencyX(service.p50)}" y1="${mid}" x2="${latencyX(service.p99)}" y2="${mid}" stroke="#345"/>`,
      )
      parts.push(`<circle cx="${latencyX(service.p50)}" cy="${mid}" r="4" fill="#345"/>`)
      const p95 = latencyX(service.p95)
      parts.push(
        `<path d="M${p95} ${mid - 5} L${p95 + 5} ${mid} L${p95} ${mid + 5} L${p95 - 5} ${mid} Z" fill="#345"/>`,
      )
      parts.push(
        `<rect x="${latencyX(service.p99) - 4}" y="${mid - 4}" width="8" height="8" fill="#345"/>`,
      )
      parts.push(
        `<circle cx="${latencyX(bare.p50)}" cy="${mid + 9}" r="3" fill="none" stroke="#999"/>`,
      )
      parts.push(
        `<rect x="${latencyX(bare.p99) - 3}" y="${mid + 6}" width="6" height="6" fill="none" stroke="#999"/>`,
      )
      parts.push(
        text(
          latencyX(service.p99) + 8,
          mid + 4,
          `${service.p99.toFixed(2)} @ ${service.offered}/s`,
          'font-size="10"',
        ),
      )
    }
  })
  if (rows.some((row) => row.label === 'history-hit')) {
    const x = latencyX(TARGETS.maxHistoryP99Ms)
    parts.push(
      `<line x1="${x}" y1="${TOP - 6}" x2="${x}" y2="${TOP + ROW}" stroke="#d1495b" stroke-dasharray="3,2"/>`,
    )
  }
  parts.push('</svg>')
  return `${parts.join('\n')}\n`
}
