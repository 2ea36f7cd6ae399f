// HS256 tokens signed with AUTH_JWT_SECRET (CONTRACT §2): the user is `sub`.
import { jwtVerify } from 'jose'
import { importHs256Key } from '../../hmac-key.ts'
import { refusedToken, type TokenVerifier, userIdOf } from './verifier.ts'

export function hs256SecretVerifier(secret: string): TokenVerifier {
  const key = importHs256Key(secret)
  return {
    algorithms: ['HS256'],
    async verify(token, now) {
      try {
        const { payload } = await jwtVerify(token, await key, {
          algorithms: ['HS256'],
          // A token without an expiry would be valid forever once leaked.
          requiredClaims: ['exp'],
          currentDate: new Date(now),
        })
        const user = userIdOf(payload.sub)
        if (user !== undefined && typeof payload.exp === 'number')
          return { user, expiresAt: payload.exp * 1000 }
      } catch {
        // Every verification failure is the same 401.
      }
      throw refusedToken()
    },
  }
}
