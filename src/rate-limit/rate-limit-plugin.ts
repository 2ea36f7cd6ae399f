// Per-user rate limits on the conversation API: a strict one on sends and a
// looser one on every request that names a user. Refused requests get 429
// {"detail","code":"rate_limited"} with Retry-After. Requests that name no
// user (docs, the playground's files, the document store, probes) are not
// counted: the limits are per user, and without a user there is nobody to
// count against but an address, which behind a load balancer is the balancer.
// A client's retry of a send it already made (CONTRACT §14) is not refused by
// the sends limit: it starts nothing, and its answer is the original's stream.
//
// Not elysia-rate-limit: its key generator sees the request but not the
// verified user, its 429 body is its own, and sharing counts across instances
// needs a store written against its Context interface, which is what the
// RateLimiter port and its Redis adapter already are.
import { Elysia } from 'elysia'
import { rateLimited } from '../errors.ts'
import type { Authenticator } from '../http/auth.ts'
import type { Metrics } from '../observability/metrics.ts'
import type { RateLimiter } from './rate-limiter.ts'

export interface RateLimits {
  /** Sends (POST /backend-api/f/conversation) per user; absent = no limit. */
  sends?: RateLimiter
  /** Requests of any kind per user; absent = no limit. */
  requests?: RateLimiter
}

export interface RateLimitDeps {
  limits: RateLimits
  /** Whose request it is; with tokens required (auth.requiresToken) only a verified token names a user. */
  auth: Authenticator
  metrics: Pick<Metrics, 'rateLimited'>
  /**
   * Whether a send the sends limit would refuse repeats one the user already
   * made (the domain's retried-send.ts): asked only then, so a send under the
   * limit costs nothing more.
   */
  isRetriedSend?: (user: string, body: unknown) => Promise<boolean>
}

const SEND_ROUTE = '/backend-api/f/conversation'
const MAX_USER_ID = 128

type Fields = Record<string, unknown>
const field = (value: unknown, name: string) =>
  typeof value === 'object' && value !== null ? (value as Fields)[name] : undefined

/**
 * The user a request names, as the routes will resolve it: the verified
 * token's user when tokens are required, else the body's user_id, the X-User-Id
 * header or the user_id query parameter. Undefined when there is none (the
 * route then answers 401 itself).
 */
async function userOf(deps: RateLimitDeps, request: Request, body: unknown, query: unknown) {
  // A token that is refused (401) or cannot be checked (503) counts for nobody: the route answers it.
  if (deps.auth.requiresToken)
    return deps.auth.optionalUserOf(request, undefined).catch(() => undefined)
  const claimed =
    field(body, 'user_id') ?? request.headers.get('x-user-id') ?? field(query, 'user_id')
  return typeof claimed === 'string' && claimed !== '' && claimed.length <= MAX_USER_ID
    ? claimed
    : undefined
}

export function rateLimitPlugin(deps: RateLimitDeps) {
  const { limits, metrics } = deps
  const check = async (
    limiter: RateLimiter | undefined,
    name: string,
    user: string,
    passes?: () => Promise<boolean>,
  ) => {
    if (!limiter) return
    const decision = await limiter.consume(user)
    if (decision.allowed) return
    if (passes && (await passes())) return
    metrics.rateLimited.inc({ limit: name })
    throw rateLimited(
      name === 'sends'
        ? 'You are sending messages too fast; try again shortly.'
        : 'Too many requests; try again shortly.',
      decision.retryAfterMs / 1000,
    )
  }
  const plugin = new Elysia({ name: 'rate-limit' })
  // No limit set, no hook: Elysia awaits a beforeHandle hook on every request.
  if (!limits.sends && !limits.requests) return plugin
  return plugin.onBeforeHandle({ as: 'global' }, async ({ request, body, query, route }) => {
    const user = await userOf(deps, request, body, query)
    if (user === undefined) return
    if (request.method !== 'POST' || route !== SEND_ROUTE)
      return check(limits.requests, 'requests', user)
    // A send's two counts go out together (one round trip to a shared store,
    // not two in a row); a send refused by the requests limit has spent its
    // sends point too, as it would had it been refused by the sends limit.
    const [requests, sends] = await Promise.allSettled([
      check(limits.requests, 'requests', user),
      check(limits.sends, 'sends', user, () =>
        deps.isRetriedSend ? deps.isRetriedSend(user, body) : Promise.resolve(false),
      ),
    ])
    if (requests.status === 'rejected') throw requests.reason
    if (sends.status === 'rejected') throw sends.reason
  })
}
