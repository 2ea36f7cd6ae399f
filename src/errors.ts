// Domain errors: what went wrong in the domain's terms (a kind) and a sentence
// for a person. They know nothing of HTTP, so any code may throw them, the
// turn runner finishing a dead owner's turn included; error-response.ts is
// the one place a kind becomes a status and the CONTRACT §3 body.

/** What went wrong, in domain terms. */
export type ErrorKind =
  /** Nobody is named, or the credential does not hold. */
  | 'unauthenticated'
  /** Someone is named, but may not do this. */
  | 'forbidden'
  /** The thing is missing, or belongs to someone else (the same answer). */
  | 'not_found'
  /** It would duplicate what is stored (a message id already used). */
  | 'conflict'
  /** The input is bigger than the service takes. */
  | 'too_large'
  /** The input did not arrive within the time the service waits for it. */
  | 'too_slow'
  /** The input breaks a rule (shape, range, encoding, place in the tree). */
  | 'invalid'
  /** The input is of a type the service cannot use (an attachment it cannot read). */
  | 'unsupported_type'
  /** The service has no room for more work now; come back later. */
  | 'busy'
  /** This user asks too often; come back later. */
  | 'rate_limited'
  /** A store the service needs does not answer. */
  | 'unavailable'
  /**
   * This process is past its capacity (open requests, running turns, event
   * loop lag): it sheds new work rather than fail it slowly; come back later.
   */
  | 'overloaded'

export class DomainError extends Error {
  /** A finer wire code than the kind's own (`invalid_json` for a body that is not JSON). */
  readonly code?: string
  /** When to come back, for `busy`, `rate_limited` and `overloaded`. */
  readonly retryAfterSeconds?: number

  constructor(
    readonly kind: ErrorKind,
    /** A sentence for a person; never internals. */
    readonly detail: string,
    options: { code?: string; retryAfterSeconds?: number } = {},
  ) {
    super(detail)
    this.name = 'DomainError'
    this.code = options.code
    this.retryAfterSeconds = options.retryAfterSeconds
  }
}

export const unauthenticated = (detail: string) => new DomainError('unauthenticated', detail)
export const forbidden = (detail: string) => new DomainError('forbidden', detail)
export const notFound = (detail: string) => new DomainError('not_found', detail)
export const conflict = (detail: string) => new DomainError('conflict', detail)
export const tooLarge = (detail: string) => new DomainError('too_large', detail)
export const tooSlow = (detail: string) => new DomainError('too_slow', detail)
export const invalid = (detail: string, code?: string) =>
  new DomainError('invalid', detail, { code })
export const unsupportedType = (detail: string) => new DomainError('unsupported_type', detail)
export const busy = (detail: string, retryAfterSeconds: number) =>
  new DomainError('busy', detail, { retryAfterSeconds })
export const rateLimited = (detail: string, retryAfterSeconds: number) =>
  new DomainError('rate_limited', detail, { retryAfterSeconds })
export const unavailable = (detail: string) => new DomainError('unavailable', detail)
export const overloaded = (detail: string, retryAfterSeconds: number) =>
  new DomainError('overloaded', detail, { retryAfterSeconds })
