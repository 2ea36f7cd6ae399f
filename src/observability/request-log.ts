// Every request gets an id and, once answered, one access log line and one
// sample of the request-duration histogram. The id is the caller's
// `x-request-id` when it is a sane token (nginx passes one on), else a new
// UUID, and is returned in the response's `x-request-id`. Probes (/health,
// /ready, /metrics) are logged at debug so they do not drown the log.
//
// A small plugin around pino rather than @bogeychan/elysia-logger: that one
// logs the full URL (query strings name users) and the referrer, keeps its
// start time in the shared `store`, writes a second line from onError, and has
// no request id, status or route template, which are the point here.
//
// The line is written from members serialized here (logger.ts,
// preformattedLines): the request id is a UUID or matched REQUEST_ID, which
// holds nothing JSON escapes, and what every request of one method, route
// and status shares (the line's members, its level, the histogram's series)
// is worked out once per such series, not per request.
import { randomUUID } from 'node:crypto'
import { Elysia, StatusMap } from 'elysia'
import { type Logger, preformattedLines } from './logger.ts'
import type { Metrics } from './metrics.ts'

/** A caller's request id we keep: also what lets the access line carry it unescaped. */
const REQUEST_ID = /^[\w.:@-]{1,128}$/
const PROBES = new Set(['/health', '/ready', '/metrics'])
/** The route label of a request no route matched: one label, whatever the path. */
export const UNMATCHED_ROUTE = '(unmatched)'

/** The caller's request id when it is a sane token, else a new one. */
export function requestIdOf(request: Request): string {
  const given = request.headers.get('x-request-id')
  return given !== null && REQUEST_ID.test(given) ? given : randomUUID()
}

/** Elysia's set.status, a number or a status name, as a number. */
function statusCode(status: number | keyof typeof StatusMap | undefined): number {
  if (typeof status === 'number') return status
  return (status && StatusMap[status]) || 200
}

export interface RequestLogDeps {
  log: Logger
  metrics: Pick<Metrics, 'requestDuration'>
}

/** What every request of one method, route and status shares, worked out once. */
interface Series {
  /** The access line's members after the request id, up to the duration's value. */
  members: string
  level: 'debug' | 'info'
  observe: (seconds: number) => void
}

export function requestLog({ log, metrics }: RequestLogDeps) {
  const started = new WeakMap<Request, { id: string; at: number }>()
  const line = preformattedLines(log, 'request')
  /** By route label, method and status: few, since labels are route templates. */
  const known = new Map<string, Map<string, Map<number, Series>>>()
  const seriesOf = (label: string, method: string, status: number): Series => {
    let byMethod = known.get(label)
    if (byMethod === undefined) {
      byMethod = new Map()
      known.set(label, byMethod)
    }
    let byStatus = byMethod.get(method)
    if (byStatus === undefined) {
      byStatus = new Map()
      byMethod.set(method, byStatus)
    }
    let series = byStatus.get(status)
    if (series === undefined) {
      series = {
        members: `"method":${JSON.stringify(method)},"route":${JSON.stringify(label)},"status":${status},"duration_ms":`,
        level: PROBES.has(label) ? 'debug' : 'info',
        observe: metrics.requestDuration.series({ method, route: label, status: String(status) }),
      }
      byStatus.set(status, series)
    }
    return series
  }
  return new Elysia({ name: 'request-log' })
    .onRequest(({ request, set }) => {
      const id = requestIdOf(request)
      started.set(request, { id, at: performance.now() })
      set.headers['x-request-id'] = id
    })
    .onAfterResponse({ as: 'global' }, ({ request, route, set, responseValue }) => {
      const start = started.get(request)
      const durationMs = start === undefined ? 0 : performance.now() - start.at
      // A handler's own Response carries its status; errors set set.status (error-handler.ts).
      const status =
        responseValue instanceof Response ? responseValue.status : statusCode(set.status)
      const series = seriesOf(route || UNMATCHED_ROUTE, request.method, status)
      series.observe(durationMs / 1000)
      const id = start === undefined ? '' : `"request_id":"${start.id}",`
      line(series.level, `${id}${series.members}${Math.round(durationMs * 10) / 10}`)
    })
}
