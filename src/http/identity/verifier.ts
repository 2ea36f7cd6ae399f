// The port every kind of bearer token is checked through (CONTRACT §2, §22):
// given a token's text and its protected header, a verifier answers who it
// names and until when, or throws. A token it cannot check (its key server
// does not answer) is a 503, never a pass: only a verifier that checked the
// signature answers with a user.
import { DomainError, unauthenticated } from '../../errors.ts'

export interface VerifiedToken {
  /** The user the token names (its `sub`, or the configured claim). */
  user: string
  /** When it stops counting, in ms since the epoch (its `exp`). */
  expiresAt: number
  /**
   * Whether remembering this answer is still right (the keys it was checked
   * with are still the ones in use); absent = until expiresAt.
   */
  stillCurrent?: () => boolean
}

export interface TokenVerifier {
  /** The `alg` header values this verifier checks; a token is routed by its alg, so no key serves another kind. */
  readonly algorithms: readonly string[]
  /** The token's user, or a DomainError: `unauthenticated` (401) or `unavailable` (503). */
  verify(token: string, now: number): Promise<VerifiedToken>
}

/** The one 401 every failed verification answers with: nothing tells an attacker which check failed. */
export const refusedToken = () => unauthenticated('The bearer token is not valid or has expired.')

/** The 503 of a token that could not be checked (the identity provider's keys are unreachable). */
export const identityUnavailable = () =>
  new DomainError(
    'unavailable',
    'The identity provider cannot be reached to check the bearer token; try again shortly.',
    { code: 'identity_unavailable' },
  )

export const MAX_USER_ID = 128

/** The claim's value as a user id: a non-empty string of at most MAX_USER_ID characters, else undefined. */
export function userIdOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' && value.length <= MAX_USER_ID
    ? value
    : undefined
}
