// Typed errors with a public sentence and a code, and the one mapper that turns
// any thrown value into the `{"detail","code"}` body of CONTRACT §3.

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    /** A sentence for a person; never internals. */
    readonly detail: string,
    /** Sent as `Retry-After` (a 429 says when to come back). */
    readonly retryAfterSeconds?: number,
  ) {
    super(detail)
    this.name = 'AppError'
  }
}

export const unauthorized = (detail = 'Authentication is required.') =>
  new AppError(401, 'unauthorized', detail)
export const forbidden = (detail: string) => new AppError(403, 'forbidden', detail)
export const notFound = (detail: string) => new AppError(404, 'not_found', detail)
export const conflict = (detail: string) => new AppError(409, 'conflict', detail)
export const payloadTooLarge = (detail: string) => new AppError(413, 'payload_too_large', detail)
export const validationFailed = (detail: string) => new AppError(422, 'validation_error', detail)
export const tooManyRequests = (detail: string, retryAfterSeconds: number) =>
  new AppError(429, 'too_many_requests', detail, retryAfterSeconds)
export const rateLimited = (detail: string, retryAfterSeconds: number) =>
  new AppError(429, 'rate_limited', detail, retryAfterSeconds)
export const unavailable = (detail: string) => new AppError(503, 'service_unavailable', detail)

export interface ErrorBody {
  detail: string
  code: string
}

/** Builds the JSON response for an error body; the only place error responses are made. */
export function errorResponse(
  status: number,
  body: ErrorBody & Record<string, unknown>,
  retryAfterSeconds?: number,
): Response {
  const headers =
    retryAfterSeconds === undefined
      ? undefined
      : { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) }
  return Response.json(body, { status, headers })
}

/** Maps an AppError to its response; anything else becomes an opaque 500. */
export function toErrorResponse(error: unknown): Response {
  if (error instanceof AppError)
    return errorResponse(
      error.status,
      { detail: error.detail, code: error.code },
      error.retryAfterSeconds,
    )
  return errorResponse(500, { detail: 'Something went wrong on our side.', code: 'internal_error' })
}
