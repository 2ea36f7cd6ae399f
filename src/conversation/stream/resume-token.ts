// Resume tokens (CONTRACT §4.2, §4.4): HS256 JWTs naming the user, the
// conversation and the assistant message of one turn, valid for 2 hours.
// Every turn signs one, on the event loop (hmac-key.ts says why not jose's
// sign); jose verifies them.
import { jwtVerify } from 'jose'
import { unauthenticated } from '../../errors.ts'
import { hs256Signer, importHs256Key, lifetime } from '../../hmac-key.ts'

export interface ResumeClaims {
  userId: string
  conversationId: string
  messageId: string
}

/** How long a resume token is valid after it is issued. */
const VALID_FOR_SECONDS = 2 * 60 * 60

export interface ResumeTokens {
  /**
   * A token for the claims, issued at `issuedAt` (Unix seconds; now by
   * default): signed for the same claims and time, it is the same bytes.
   */
  sign(claims: ResumeClaims, issuedAt?: number): string
  /** The claims of a valid token; `unauthenticated` for a bad, expired or wrongly signed one. */
  verify(token: string): Promise<ResumeClaims>
}

export function createResumeTokens(secret: string): ResumeTokens {
  const key = importHs256Key(secret)
  const signed = hs256Signer(secret)
  return {
    sign(claims, issuedAt) {
      // The claims in the order jose's SignJWT wrote them.
      return signed({
        conversation_id: claims.conversationId,
        message_id: claims.messageId,
        sub: claims.userId,
        ...lifetime(VALID_FOR_SECONDS, issuedAt),
      })
    },
    async verify(token) {
      try {
        const { payload } = await jwtVerify(token, await key, { algorithms: ['HS256'] })
        const { sub, conversation_id, message_id } = payload
        if (
          typeof sub === 'string' &&
          typeof conversation_id === 'string' &&
          typeof message_id === 'string'
        )
          return { userId: sub, conversationId: conversation_id, messageId: message_id }
      } catch {
        // Fall through: every failure is the same `unauthenticated` to the client.
      }
      throw unauthenticated('The resume token is not valid or has expired.')
    },
  }
}
