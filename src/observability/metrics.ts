// The service's Prometheus metrics (prom-client), in a registry of their own
// that GET /metrics serves: HTTP requests, turns, streams, the model's first
// chunk, cache lookups, the database pool, rate limits and sends shed as
// overloaded, this process's event-loop lag as the stores' failure policy
// and admission control see it (event-loop-lag.ts), plus the process metrics
// prom-client collects (CPU, memory, event loop lag, GC).
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'

/**
 * Cache lookups by key kind and result, counted as plain numbers here and
 * added to the prom-client counter when the registry is read: its inc
 * validates and hashes the labels on every call, which with the kind's
 * string work was 5 % of a cache hit's CPU. Kinds are few (keys without ids).
 */
function cacheLookupCounter(registers: Registry[]) {
  const counts = new Map<string, { hit: number; miss: number }>()
  const counter = new Counter({
    name: 'conduit_cache_lookups_total',
    help: 'Cache reads by key kind (e.g. conv:history) and result (hit, miss).',
    labelNames: ['kind', 'result'] as const,
    registers,
    collect() {
      for (const [kind, count] of counts) {
        if (count.hit > 0) this.inc({ kind, result: 'hit' }, count.hit)
        if (count.miss > 0) this.inc({ kind, result: 'miss' }, count.miss)
        count.hit = 0
        count.miss = 0
      }
    },
  })
  return {
    counter,
    /** One lookup of a key of `kind`. */
    count(kind: string, hit: boolean) {
      let count = counts.get(kind)
      if (count === undefined) {
        count = { hit: 0, miss: 0 }
        counts.set(kind, count)
      }
      if (hit) count.hit++
      else count.miss++
    },
  }
}

/** From 5 ms to 60 s: fast cache reads and slow model replies in one scale. */
const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

/** Observations held before they are handed to prom-client in one loop. */
export const PENDING_OBSERVATIONS = 1024

type RequestLabel = 'method' | 'route' | 'status'
type RequestLabels = Record<RequestLabel, string>

/**
 * The request-duration histogram, observed per label set through a handle
 * (`series`) that only stores the value: prom-client's observe validates and
 * hashes the labels on every call, about 1 µs of a cache hit's CPU on the
 * request path. The values are handed to it in one loop (hot, so a fraction
 * of that) when PENDING_OBSERVATIONS are held and whenever the registry is
 * read, so /metrics shows exactly what a direct observe would have.
 */
function requestDurationHistogram(registers: Registry[]) {
  const all: { labels: RequestLabels; values: number[] }[] = []
  let pending = 0
  const flush = () => {
    if (pending === 0) return
    pending = 0
    for (const series of all) {
      for (const value of series.values) histogram.observe(series.labels, value)
      series.values.length = 0
    }
  }
  const histogram = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time from a request to its response (for a stream: to its headers), by route and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: SECONDS,
    registers,
    collect: flush,
  })
  return {
    histogram,
    /** A recorder of durations (seconds) for one label set; keep it per label set. */
    series(labels: RequestLabels): (seconds: number) => void {
      const series = { labels: { ...labels }, values: [] as number[] }
      let listed = false
      return (seconds) => {
        // Handed over in the order series are first observed, as prom-client lists them.
        if (!listed) {
          all.push(series)
          listed = true
        }
        series.values.push(seconds)
        if (++pending >= PENDING_OBSERVATIONS) flush()
      }
    },
  }
}

export type Metrics = ReturnType<typeof createMetrics>

export interface MetricsOptions {
  /** prom-client's process metrics (default true). */
  processMetrics?: boolean
  /** The monitor of this process's event loop (event-loop-lag.ts), shown as a gauge when given. */
  eventLoopLag?: { recentLagMs(): number }
}

export function createMetrics(options: MetricsOptions = {}) {
  const registry = new Registry()
  const registers = [registry]
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry })
  const lag = options.eventLoopLag
  if (lag)
    new Gauge({
      name: 'conduit_event_loop_lag_seconds',
      help: 'How late this process ran a 10 ms timer over the last second, the median (what OVERLOAD_LAG_MS is compared with).',
      registers,
      collect() {
        this.set(lag.recentLagMs() / 1000)
      },
    })
  return {
    registry,
    requestDuration: requestDurationHistogram(registers),
    turnsStarted: new Counter({
      name: 'conduit_turns_started_total',
      help: 'Turns whose reply this process started to stream.',
      registers,
    }),
    turnsFinished: new Counter({
      name: 'conduit_turns_finished_total',
      help: 'Turns this process ended, by outcome (stop, interrupted, error).',
      labelNames: ['outcome'] as const,
      registers,
    }),
    activeStreams: new Gauge({
      name: 'conduit_active_streams',
      help: 'Event streams (sends and resumes) open in this process.',
      registers,
    }),
    streamItems: new Counter({
      name: 'conduit_stream_items_sent_total',
      help: 'Items written to event streams.',
      registers,
    }),
    timeToFirstItem: new Histogram({
      name: 'conduit_time_to_first_item_seconds',
      help: 'From accepting a send to the first item of reply text (queue wait included).',
      buckets: SECONDS,
      registers,
    }),
    modelFirstChunk: new Histogram({
      name: 'conduit_model_first_chunk_seconds',
      help: "The model's latency to its first chunk.",
      buckets: SECONDS,
      registers,
    }),
    cacheLookups: cacheLookupCounter(registers),
    dbPool: new Gauge({
      name: 'conduit_db_pool_connections',
      help: 'Database pool: size, connections in use, and queries waiting for one.',
      labelNames: ['state'] as const,
      registers,
    }),
    rateLimited: new Counter({
      name: 'conduit_rate_limited_total',
      help: 'Requests refused with 429 by a rate limit (sends, requests).',
      labelNames: ['limit'] as const,
      registers,
    }),
    overloaded: new Counter({
      name: 'conduit_overloaded_total',
      help: 'Requests refused with 503 overloaded, by reason: shed sends (open_requests, running_turns, event_loop_lag), or a store deadline missed while this process lagged (database_deadline, state_deadline, cache_deadline).',
      labelNames: ['reason'] as const,
      registers,
    }),
  }
}
