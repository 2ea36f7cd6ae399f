// The one place an error becomes HTTP (CONTRACT §3): a domain error's kind
// gives the status and the wire code, the body is `{"detail","code"}`, and a
// kind that says when to come back sends Retry-After. Anything that is not a
// DomainError is an opaque 500, so no internals reach a client. An answer
// about a body (too large, too slow) closes the connection: the rest of that
// body is unread, and a client still sending it gets no more of our time.

import { DomainError, type ErrorKind } from '../errors.ts'
import type { ErrorBody } from './error-schema.ts'

/** Each kind's status and the code sent for it; a DomainError may name a finer code. */
const HTTP_OF_KIND: Readonly<Record<ErrorKind, { status: number; code: string }>> = {
  unauthenticated: { status: 401, code: 'unauthorized' },
  forbidden: { status: 403, code: 'forbidden' },
  not_found: { status: 404, code: 'not_found' },
  conflict: { status: 409, code: 'conflict' },
  too_large: { status: 413, code: 'payload_too_large' },
  too_slow: { status: 408, code: 'request_timeout' },
  invalid: { status: 422, code: 'validation_error' },
  unsupported_type: { status: 415, code: 'unsupported_media_type' },
  busy: { status: 429, code: 'too_many_requests' },
  rate_limited: { status: 429, code: 'rate_limited' },
  unavailable: { status: 503, code: 'service_unavailable' },
  overloaded: { status: 503, code: 'overloaded' },
}

const INTERNAL_ERROR: typeof ErrorBody.static = {
  detail: 'Something went wrong on our side.',
  code: 'internal_error',
}

/** Kinds whose answer ends the connection (Bun closes it after a `Connection: close` answer). */
const CLOSES_CONNECTION: ReadonlySet<ErrorKind> = new Set(['too_large', 'too_slow'])

/** The response for any thrown value: a DomainError's kind decides, anything else is a 500. */
export function toErrorResponse(error: unknown): Response {
  if (!(error instanceof DomainError)) return Response.json(INTERNAL_ERROR, { status: 500 })
  const { status, code } = HTTP_OF_KIND[error.kind]
  const body: typeof ErrorBody.static = { detail: error.detail, code: error.code ?? code }
  const headers: Record<string, string> = {}
  const retryAfter = error.retryAfterSeconds
  if (retryAfter !== undefined) headers['retry-after'] = String(Math.max(1, Math.ceil(retryAfter)))
  if (CLOSES_CONNECTION.has(error.kind)) headers.connection = 'close'
  return Response.json(body, { status, headers })
}
