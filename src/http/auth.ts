// Who is calling (CONTRACT §2). Development mode trusts the user id the client
// names; with AUTH_JWT_SECRET set, only a verified HS256 bearer token counts.
//
// A token that verified is remembered, by its exact text, until its `exp`:
// verifying it again can only give the same answer until then (the key, the
// signature and every claim but the time are fixed), and a verification is
// about 15-30 µs of CPU, as much as the rest of a cache hit. Only tokens that
// verified are kept (a flood of bad ones fills nothing), at most
// VERIFIED_TOKENS of them and 8 MiB of their text, least recently used first out.
import { jwtVerify } from 'jose'
import { LRUCache } from 'lru-cache'
import { forbidden, invalid, unauthenticated } from '../errors.ts'
import { importHs256Key } from '../hmac-key.ts'

export interface Authenticator {
  /**
   * The user of a request. `claimed` is the user id the request names (body
   * `user_id`, `X-User-Id` header or `user_id` query): trusted in development
   * mode, and required to match the token's `sub` in JWT mode (else 403).
   */
  userOf(request: Request, claimed: string | undefined): Promise<string>
  /** The verified user when the request carries an identity, else undefined (resume). */
  optionalUserOf(request: Request, claimed: string | undefined): Promise<string | undefined>
}

const MAX_USER_ID = 128
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
  jwtSecret: string | undefined,
  { now = Date.now }: AuthenticatorOptions = {},
): Authenticator {
  if (jwtSecret === undefined) {
    const optionalUserOf = async (_request: Request, claimed: string | undefined) =>
      checkUserId(claimed)
    return {
      optionalUserOf,
      async userOf(request, claimed) {
        const user = await optionalUserOf(request, claimed)
        if (user === undefined)
          throw unauthenticated('Say who you are: user_id in the body, or the X-User-Id header.')
        return user
      },
    }
  }

  const key = importHs256Key(jwtSecret)
  const verified = new LRUCache<string, { sub: string; expiresAt: number }>({
    max: VERIFIED_TOKENS,
    maxSize: VERIFIED_TOKEN_CHARS,
    sizeCalculation: (_, token) => token.length,
  })
  async function subjectOf(request: Request): Promise<string> {
    const header = request.headers.get('authorization') ?? ''
    const match = /^Bearer\s+(\S+)$/i.exec(header)
    const token = match?.[1]
    if (!token) throw unauthenticated('An Authorization: Bearer token is required.')
    const known = verified.get(token)
    if (known !== undefined) {
      if (now() < known.expiresAt) return known.sub
      verified.delete(token)
    }
    try {
      const { payload } = await jwtVerify(token, await key, {
        algorithms: ['HS256'],
        // A token without an expiry would be valid forever once leaked.
        requiredClaims: ['exp'],
        currentDate: new Date(now()),
      })
      const sub = checkUserId(typeof payload.sub === 'string' ? payload.sub : undefined)
      if (sub !== undefined && typeof payload.exp === 'number') {
        verified.set(token, { sub, expiresAt: payload.exp * 1000 })
        return sub
      }
    } catch {
      // Every verification failure is the same 401.
    }
    throw unauthenticated('The bearer token is not valid or has expired.')
  }
  const userOf = async (request: Request, claimed: string | undefined) => {
    const sub = await subjectOf(request)
    if (claimed !== undefined && claimed !== '' && claimed !== sub)
      throw forbidden('The user_id does not match the authenticated user.')
    return sub
  }
  return { userOf, optionalUserOf: userOf }
}
