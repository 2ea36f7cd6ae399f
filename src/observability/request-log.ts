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
// holds nothing JSON escapes, and each route template is quoted once.
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

export function requestLog({ log, metrics }: RequestLogDeps) {
  const started = new WeakMap<Request, { id: string; at: number }>()
  const line = preformattedLines(log, 'request')
  const quotedRoutes = new Map<string, string>()
  /** The route label as JSON; labels are route templates, so the map stays as small as the app. */
  const quotedRoute = (label: string) => {
    let quoted = quotedRoutes.get(label)
    if (quoted === undefined) {
      quoted = JSON.stringify(label)
      quotedRoutes.set(label, quoted)
    }
    return quoted
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
      const label = route || UNMATCHED_ROUTE
      metrics.requestDuration.observe(
        { method: request.method, route: label, status: String(status) },
        durationMs / 1000,
      )
      const id = start === undefined ? '' : `"request_id":"${start.id}",`
      line(
        PROBES.has(route) ? 'debug' : 'info',
        `${id}"method":${JSON.stringify(request.method)},"route":${quotedRoute(label)},"status":${status},"duration_ms":${Math.round(durationMs * 10) / 10}`,
      )
    })
}
