// Who is calling (CONTRACT §2). Development mode trusts the user id the client
// names; with AUTH_JWT_SECRET set, only a verified HS256 bearer token counts.
import { jwtVerify } from 'jose'
import { forbidden, invalid, unauthenticated } from './errors.ts'
import { importHs256Key } from './hmac-key.ts'

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

function checkUserId(userId: string | undefined): string | undefined {
  if (userId === undefined || userId === '') return undefined
  if (userId.length > MAX_USER_ID)
    throw invalid(`The user id must be at most ${MAX_USER_ID} characters.`)
  return userId
}

export function createAuthenticator(jwtSecret: string | undefined): Authenticator {
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
  async function subjectOf(request: Request): Promise<string> {
    const header = request.headers.get('authorization') ?? ''
    const match = /^Bearer\s+(\S+)$/i.exec(header)
    if (!match?.[1]) throw unauthenticated('An Authorization: Bearer token is required.')
    try {
      const { payload } = await jwtVerify(match[1], await key, {
        algorithms: ['HS256'],
        // A token without an expiry would be valid forever once leaked.
        requiredClaims: ['exp'],
      })
      const sub = checkUserId(typeof payload.sub === 'string' ? payload.sub : undefined)
      if (sub !== undefined) return sub
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
