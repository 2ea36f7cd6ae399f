// Whether an error says the Redis that holds the turn state cannot be reached
// right now (unavailable, like a database that is down), as ioredis reports it: a
// command given up after its retries or its deadline, a closed connection, a
// socket error, or a deployment between primaries (a Cluster or Sentinel
// failing over, a replica loading or still read-only); or as the state's
// breaker does (store-breaker.ts): the sends limit refusing a send while the
// state is unreachable.
import { StoreUnavailableError } from '../storage/store-breaker.ts'

const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'EPIPE'])
/** Replies of a server that cannot serve writes right now. */
const FAILING_OVER = /^(CLUSTERDOWN|TRYAGAIN|LOADING|READONLY|MASTERDOWN|NOREPLICAS) /
/** ioredis giving up on a Cluster (no node answers, redirected too often) or on Sentinels. */
const GIVEN_UP = new Set(['ClusterAllFailedError'])
const GIVEN_UP_MESSAGES = [
  'Too many Cluster redirections.',
  'Cluster is ended.',
  'All sentinels are unreachable.',
]

export function isStateUnavailable(error: unknown): boolean {
  if (error instanceof StoreUnavailableError) return error.store === 'state'
  if (!(error instanceof Error)) return false
  if (error.name === 'MaxRetriesPerRequestError') return true
  if (error.message === 'Connection is closed.') return true
  // ioredis's commandTimeout: the server did not answer in time (frozen, overloaded).
  if (error.message === 'Command timed out') return true
  if (GIVEN_UP.has(error.name) || FAILING_OVER.test(error.message)) return true
  if (GIVEN_UP_MESSAGES.some((message) => error.message.startsWith(message))) return true
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' && SOCKET_CODES.has(code)
}
