// Headers that hooks put in `set.headers` (the request id, CORS) reach a route's
// own Response without rebuilding it. Elysia merges `set.headers` into a
// returned Response by constructing a new one from the old one's body stream,
// which turned a cached JSON string into a stream and back on every request:
// 40 % of a history cache hit's CPU, measured with the CPU profiler.
//
// `textResponse` builds a route's Response with those headers in it; the hook
// moves them onto any other Response a route returns (a Response built here
// has mutable headers, though setting them one by one costs more than
// building them in). Either way `set.headers` is left empty, so Elysia passes
// the Response on as it is. Anything else - a status set by a hook, a cookie,
// a Response whose headers cannot change - is left to Elysia's own merge.
//
// Every answer also says `X-Content-Type-Options: nosniff` (CONTRACT §19): a
// browser must never run a JSON error or an echoed text as a script or page.
// It is one of the app's default headers, which Elysia copies into each
// request's `set.headers`, so it travels the same way as the request id.
import { Elysia } from 'elysia'

/** Headers every answer carries, whatever produced it. */
export const ALWAYS_HEADERS = Object.freeze({ 'x-content-type-options': 'nosniff' })

interface ResponseSet {
  headers: Record<string, string | number>
  status?: number | string
}

/** Empties `set.headers` (a new object: deleting keys one by one cost more than the rest of this). */
const clear = (set: ResponseSet) => {
  set.headers = {}
}

/** A Response of `body` as `contentType` carrying the headers hooks have set, which it takes from `set`. */
export function textResponse(set: ResponseSet, body: string, contentType: string): Response {
  const response = new Response(body, {
    headers: { ...set.headers, 'content-type': contentType } as Record<string, string>,
  })
  clear(set)
  return response
}

/** Moves `headers` onto `response` unless it has them already; false when its headers are immutable. */
function foldInto(response: Response, headers: Record<string, unknown>): boolean {
  try {
    for (const key in headers) {
      const value = headers[key]
      if (typeof value === 'string' && !response.headers.has(key)) response.headers.set(key, value)
    }
    return true
  } catch {
    return false
  }
}

export const responseHeaders = new Elysia({ name: 'response-headers' })
  .headers(ALWAYS_HEADERS)
  .mapResponse({ as: 'global' }, ({ responseValue, set }) => {
    if (!(responseValue instanceof Response)) return
    if (set.status !== undefined && set.status !== 200) return
    if (set.cookie !== undefined || 'set-cookie' in set.headers) return
    const headers = set.headers as Record<string, unknown>
    if (!foldInto(responseValue, headers)) return
    clear(set as ResponseSet)
    return responseValue
  })
