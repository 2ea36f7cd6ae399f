// The `conduit_token` of POST /f/conversation/prepare (CONTRACT §17): an
// HS256 JWT naming the user, which chatgpt.com clients carry to their next
// send. This service asks nothing of a send beyond its identity, so the token
// is only ever handed out; it is signed with the resume-token secret but has
// no conversation or message claim, so /resume refuses it.
import { hs256Signer, lifetime } from '../hmac-key.ts'

/** How long a conduit token claims to be good for: a client prepares right before it sends. */
const LIFETIME_SECONDS = 10 * 60

/** Signs conduit tokens for a user with `secret`. */
export function createConduitTokens(secret: string): (userId: string) => string {
  const signed = hs256Signer(secret)
  return (userId) => signed({ purpose: 'conduit', sub: userId, ...lifetime(LIFETIME_SECONDS) })
}
