// Who is calling (CONTRACT §2, §22). Development mode trusts the user id the
// client names; with AUTH_JWT_SECRET and/or AUTH_JWKS_URL set, only a
// verified bearer token counts. The token's `alg` header picks the one
// verifier that checks it (identity/: an HS256 secret, a provider's JWKS), so
// an HS256 token is never checked against a public key nor an RS256 one
// against the secret; an alg no verifier takes is a 401.
//
// A token that verified is remembered, by its exact text, until its `exp`
// (and, for a provider's token, while the keys it was checked with are the
// ones in use): verifying it again can only give the same answer until then,
// and a verification is about 15-30 µs of CPU (HS256), as much as the rest
// of a cache hit. Only tokens that verified are kept (a flood of bad ones
// fills nothing), at most VERIFIED_TOKENS of them and 8 MiB of their text,
// least recently used first out.
import { decodeProtectedHeader } from 'jose'
import { LRUCache } from 'lru-cache'
import { forbidden, invalid, unauthenticated } from '../errors.ts'
import { bearerToken } from './bearer-token.ts'
import { hs256SecretVerifier } from './identity/hs256-secret.ts'
import { type JwksSettings, jwksVerifier } from './identity/jwks.ts'
import {
  MAX_USER_ID,
  refusedToken,
  type TokenVerifier,
  type VerifiedToken,
} from './identity/verifier.ts'

export interface Authenticator {
  /** True when only a verified bearer token names a user (a secret or a provider is configured). */
  readonly requiresToken: boolean
  /**
   * The user of a request. `claimed` is the user id the request names (body
   * `user_id`, `X-User-Id` header or `user_id` query): trusted in development
   * mode, and required to match the token's user in token mode (else 403).
   */
  userOf(request: Request, claimed: string | undefined): Promise<string>
  /** The verified user when the request carries an identity, else undefined (resume). */
  optionalUserOf(request: Request, claimed: string | undefined): Promise<string | undefined>
}

/** Where tokens come from: neither = development mode. */
export interface IdentitySettings {
  /** AUTH_JWT_SECRET: HS256 tokens. */
  jwtSecret?: string
  /** AUTH_JWKS_URL and its issuer, audience and user claim: a provider's tokens. */
  jwks?: JwksSettings
}

/** Verified tokens remembered per authenticator, and their text's bound in characters. */
export const VERIFIED_TOKENS = 10_000
const VERIFIED_TOKEN_CHARS = 8 * 2 ** 20

function checkUserId(userId: string | undefined): string | undefined {
  if (userId === undefined || userId === '') return undefined
  if (userId.length > MAX_USER_ID)
    throw invalid(`The user id must be at most ${MAX_USER_ID} characters.`)
  return userId
}

export interface AuthenticatorOptions {
  /** The clock tokens expire by, in ms (tests move it); Date.now when absent. */
  now?: () => number
}

export function createAuthenticator(
  identity: IdentitySettings,
  { now = Date.now }: AuthenticatorOptions = {},
): Authenticator {
  const verifiers: TokenVerifier[] = []
  if (identity.jwtSecret !== undefined) verifiers.push(hs256SecretVerifier(identity.jwtSecret))
  if (identity.jwks !== undefined) verifiers.push(jwksVerifier(identity.jwks))
  if (verifiers.length === 0) return developmentAuthenticator()

  const byAlgorithm = new Map<string, TokenVerifier>()
  for (const verifier of verifiers)
    for (const alg of verifier.algorithms) byAlgorithm.set(alg, verifier)
  const verified = new LRUCache<string, VerifiedToken>({
    max: VERIFIED_TOKENS,
    maxSize: VERIFIED_TOKEN_CHARS,
    sizeCalculation: (_, token) => token.length,
  })

  async function subjectOf(request: Request): Promise<string> {
    const token = bearerToken(request.headers.get('authorization'))
    if (!token) throw unauthenticated('An Authorization: Bearer token is required.')
    const known = verified.get(token)
    if (known !== undefined) {
      if (now() < known.expiresAt && (known.stillCurrent?.() ?? true)) return known.user
      verified.delete(token)
    }
    const verifier = verifierOf(token)
    if (verifier === undefined) throw refusedToken()
    const result = await verifier.verify(token, now())
    verified.set(token, result)
    return result.user
  }

  function verifierOf(token: string): TokenVerifier | undefined {
    try {
      const { alg } = decodeProtectedHeader(token)
      return typeof alg === 'string' ? byAlgorithm.get(alg) : undefined
    } catch {
      return undefined
    }
  }

  const userOf = async (request: Request, claimed: string | undefined) => {
    const sub = await subjectOf(request)
    if (claimed !== undefined && claimed !== '' && claimed !== sub)
      throw forbidden('The user_id does not match the authenticated user.')
    return sub
  }
  return { requiresToken: true, userOf, optionalUserOf: userOf }
}

/** Development mode: the user is whoever the request names. */
function developmentAuthenticator(): Authenticator {
  const optionalUserOf = async (_request: Request, claimed: string | undefined) =>
    checkUserId(claimed)
  return {
    requiresToken: false,
    optionalUserOf,
    async userOf(request, claimed) {
      const user = await optionalUserOf(request, claimed)
      if (user === undefined)
        throw unauthenticated('Say who you are: user_id in the body, or the X-User-Id header.')
      return user
    },
  }
}
