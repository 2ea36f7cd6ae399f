// The many-streams figures of the service beside those of its bare SSE
// reference (bare-sse-streams.ts) from the same run, and their ratios (service
// ÷ reference): what the scale report's reference table and JSON show.
import type { ManyStreamsResult } from './streaming.ts'

/** The figures of one many-streams run that the comparison shows. */
export interface StreamFigures {
  clients: number
  completed: number
  firstItemP50Ms: number
  firstItemP99Ms: number
  gapP50Ms: number
  gapP99Ms: number
  /** Append items a second the clients received, all streams together. */
  itemsPerSec: number
  /** CPU of every server process (not the load balancer, Redis or Postgres) over the append items received. */
  serverCpuUsPerItem: number | undefined
  /** The highest peak RSS of any server. */
  rssPeakBytes: number | undefined
  /** Fraction (0–1) of the whole machine's CPU busy during the run. */
  machineBusy: number | undefined
}

/** Service ÷ reference; undefined where either figure is missing or the reference's is 0. */
export interface StreamRatios {
  firstItemP50: number | undefined
  firstItemP99: number | undefined
  gapP50: number | undefined
  gapP99: number | undefined
  itemsPerSec: number | undefined
  serverCpuPerItem: number | undefined
  rssPeak: number | undefined
}

export interface BareSseComparison {
  service: StreamFigures
  reference: StreamFigures
  ratio: StreamRatios
}

/** `server 1`, `server 2`, …: the names cluster.ts gives the server processes' CPU. */
const SERVER_CPU = /^server \d+$/

export function streamFigures(result: ManyStreamsResult): StreamFigures {
  const serverSeconds = result.cpu.uses
    .filter((use) => SERVER_CPU.test(use.name))
    .reduce((sum, use) => sum + use.seconds, 0)
  return {
    clients: result.clients,
    completed: result.completed,
    firstItemP50Ms: result.timeToFirstItem.p50,
    firstItemP99Ms: result.timeToFirstItem.p99,
    gapP50Ms: result.itemGap.p50,
    gapP99Ms: result.itemGap.p99,
    itemsPerSec: result.itemsPerSec,
    serverCpuUsPerItem:
      result.appendItems > 0 ? (serverSeconds * 1e6) / result.appendItems : undefined,
    rssPeakBytes: result.rssPeakBytes,
    machineBusy: result.cpu.machineBusy,
  }
}

const ratioOf = (service: number | undefined, reference: number | undefined) =>
  service === undefined || reference === undefined || reference === 0
    ? undefined
    : service / reference

export function compareWithBareSse(
  service: ManyStreamsResult,
  reference: ManyStreamsResult,
): BareSseComparison {
  const s = streamFigures(service)
  const r = streamFigures(reference)
  return {
    service: s,
    reference: r,
    ratio: {
      firstItemP50: ratioOf(s.firstItemP50Ms, r.firstItemP50Ms),
      firstItemP99: ratioOf(s.firstItemP99Ms, r.firstItemP99Ms),
      gapP50: ratioOf(s.gapP50Ms, r.gapP50Ms),
      gapP99: ratioOf(s.gapP99Ms, r.gapP99Ms),
      itemsPerSec: ratioOf(s.itemsPerSec, r.itemsPerSec),
      serverCpuPerItem: ratioOf(s.serverCpuUsPerItem, r.serverCpuUsPerItem),
      rssPeak: ratioOf(s.rssPeakBytes, r.rssPeakBytes),
    },
  }
}
