// Tokens of an identity provider (CONTRACT §22): RS256, ES256 or EdDSA,
// signed by a key of the provider's JWKS, with its issuer and audience, not
// expired. jose's remote key set fetches the JWKS once, keeps it for
// cacheMaxAge, and fetches it again for a kid it does not know, at most once
// per cooldown (a minute): a flood of made-up kids costs the provider one
// request a minute. A fetch that fails (refused, timed out, not a JWKS) makes
// the token a 503: it could not be checked, so it is not accepted.
import {
  createRemoteJWKSet,
  type ExportedJWKSCache,
  errors,
  type FlattenedJWSInput,
  type JWSHeaderParameters,
  jwksCache,
  jwtVerify,
} from 'jose'
import { DomainError } from '../../errors.ts'
import { identityUnavailable, refusedToken, type TokenVerifier, userIdOf } from './verifier.ts'

export const JWKS_ALGORITHMS = ['RS256', 'ES256', 'EdDSA'] as const

/** Never fetch the JWKS more than once a minute for unknown kids. */
export const JWKS_COOLDOWN_MS = 60_000
/** How long fetched keys are used before the JWKS is fetched again (jose's default). */
export const JWKS_CACHE_MAX_AGE_MS = 10 * 60_000
/** Longest wait for the JWKS. */
export const JWKS_TIMEOUT_MS = 5_000

export interface JwksSettings {
  url: string
  issuer: string
  audience: string
  /** The claim naming the user (`sub` by default). */
  userClaim: string
}

/** A key lookup that failed because the key server did not answer (as opposed to a bad token). */
class KeysUnreachable extends Error {}

export function jwksVerifier(settings: JwksSettings): TokenVerifier {
  // jose records here when it last applied a fetched JWKS (`uat`): a
  // remembered token counts only while the keys it was checked with are the
  // ones in use.
  const fetched = {} as ExportedJWKSCache
  const remote = createRemoteJWKSet(new URL(settings.url), {
    cooldownDuration: JWKS_COOLDOWN_MS,
    cacheMaxAge: JWKS_CACHE_MAX_AGE_MS,
    timeoutDuration: JWKS_TIMEOUT_MS,
    [jwksCache]: fetched,
  })
  const keyFor = async (header: JWSHeaderParameters, input: FlattenedJWSInput) => {
    try {
      return await remote(header, input)
    } catch (error) {
      // No key for this token: the token's fault. Anything else (refused,
      // timed out, not 200, not a JWKS): the key server's.
      if (
        error instanceof errors.JWKSNoMatchingKey ||
        error instanceof errors.JWKSMultipleMatchingKeys ||
        error instanceof errors.JOSENotSupported
      )
        throw error
      throw new KeysUnreachable()
    }
  }
  return {
    algorithms: JWKS_ALGORITHMS,
    async verify(token, now) {
      let payload: Record<string, unknown>
      try {
        ;({ payload } = await jwtVerify(token, keyFor, {
          algorithms: [...JWKS_ALGORITHMS],
          issuer: settings.issuer,
          audience: settings.audience,
          requiredClaims: ['exp'],
          currentDate: new Date(now),
        }))
      } catch (error) {
        if (error instanceof KeysUnreachable) throw identityUnavailable()
        if (error instanceof DomainError) throw error
        throw refusedToken()
      }
      const user = userIdOf(payload[settings.userClaim])
      if (user === undefined || typeof payload.exp !== 'number') throw refusedToken()
      const checkedWith = fetched.uat
      return {
        user,
        expiresAt: payload.exp * 1000,
        stillCurrent: () => remote.fresh && fetched.uat === checkedWith,
      }
    },
  }
}
