// HS256 with one secret: the WebCrypto key jose's verify takes, imported
// once (jose imports a raw byte key again on every call, which shows on the
// send path), and the one signer of the service's own tokens (resume, file
// URL and conduit tokens). jose 6 signs only through WebCrypto, which Bun
// runs off the event loop: about 40 µs of CPU and a thread hop a token,
// against under 1 µs for node:crypto's HMAC (measured side by side). The
// signer writes the same compact JWS jose's SignJWT does for the same claims
// (tested), so jose verifies what it signs.
import { createHmac } from 'node:crypto'

/** The key jose's HS256 verify takes, for secret (its UTF-8 bytes). */
export function importHs256Key(secret: string): Promise<CryptoKey> {
  return crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(secret),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign', 'verify'],
  )
}

/** The protected header jose writes for `{ alg: 'HS256', typ: 'JWT' }`, encoded. */
const HEADER = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url')

/**
 * A token's `iat` and `exp` claims (whole seconds): issued at `issuedAt`
 * (now, in seconds, unless given), good for `seconds`. Spread last into the
 * claims, where jose's SignJWT wrote them.
 */
export function lifetime(
  seconds: number,
  issuedAt = Date.now() / 1000,
): { iat: number; exp: number } {
  const iat = Math.floor(issuedAt)
  return { iat, exp: iat + seconds }
}

/**
 * A signer of HS256 JWTs with secret (its UTF-8 bytes), on the event loop:
 * `claims` are written as given, in their order.
 */
export function hs256Signer(secret: string): (claims: Record<string, unknown>) => string {
  const key = Buffer.from(secret, 'utf8')
  return (claims) => {
    const signed = `${HEADER}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`
    return `${signed}.${createHmac('sha256', key).update(signed).digest('base64url')}`
  }
}
