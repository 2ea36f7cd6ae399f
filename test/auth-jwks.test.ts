// The authenticator with a provider's JWKS (CONTRACT §22), alone and beside
// an HS256 secret, against test/support/jwks-server.ts as a real process on
// loopback: a token is checked by the one verifier of its alg (an HS256 token
// never against a public key, an RS256 one never against the secret),
// AUTH_USER_CLAIM names the user, a verified token is remembered, and a key
// server that answers with something other than a key set is a 503.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { SignJWT } from 'jose'
import { DomainError } from '../src/errors.ts'
import { createAuthenticator } from '../src/http/auth.ts'
import {
  bearer,
  type JwksServer,
  type ProviderKey,
  providerKey,
  providerToken,
  startJwksServer,
  TEST_AUDIENCE,
  TEST_ISSUER,
} from './support/jwks.ts'

const SECRET = 'auth-jwks-test-secret'
let jwks: JwksServer
let rsa: ProviderKey
beforeAll(async () => {
  jwks = await startJwksServer()
  rsa = await providerKey('RS256', 'unit-rsa')
  await jwks.publish([rsa])
})
afterAll(() => jwks.stop())

const provider = (userClaim = 'sub', url = () => jwks.url) => ({
  url: url(),
  issuer: TEST_ISSUER,
  audience: TEST_AUDIENCE,
  userClaim,
})
const requestWith = (token: string) => new Request('http://localhost/', { headers: bearer(token) })

/** The user, or the error's kind and wire code. */
type Outcome = { user?: string; kind?: string; code?: string; thrown?: string }
const outcome = (promise: Promise<string>): Promise<Outcome> =>
  promise.then(
    (user) => ({ user }),
    (error: unknown) =>
      error instanceof DomainError
        ? { kind: error.kind, code: error.code }
        : { thrown: String(error) },
  )
const REFUSED: Outcome = { kind: 'unauthenticated', code: undefined }

const hs256 = (claims: Record<string, unknown>, alg: string, secret: Uint8Array) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg })
    .setIssuer(TEST_ISSUER)
    .setAudience(TEST_AUDIENCE)
    .setExpirationTime('1h')
    .sign(secret)

describe('beside AUTH_JWT_SECRET', () => {
  test('each kind of token is checked by its own verifier, and only by it', async () => {
    const auth = createAuthenticator({ jwtSecret: SECRET, jwks: provider() })
    expect(auth.requiresToken).toBe(true)
    const secret = new TextEncoder().encode(SECRET)
    expect(
      await outcome(auth.userOf(requestWith(await providerToken(rsa, 'ann')), undefined)),
    ).toEqual({
      user: 'ann',
    })
    expect(
      await outcome(
        auth.userOf(requestWith(await hs256({ sub: 'bob' }, 'HS256', secret)), undefined),
      ),
    ).toEqual({
      user: 'bob',
    })
    // The public key as an HS256 secret: checked against AUTH_JWT_SECRET, refused.
    const publicKeyAsSecret = new TextEncoder().encode(JSON.stringify(rsa.jwk))
    const confused = await hs256({ sub: 'mallory' }, 'HS256', publicKeyAsSecret)
    expect(await outcome(auth.userOf(requestWith(confused), undefined))).toEqual(REFUSED)
    // An HMAC signature under an RS256 header: checked against the JWKS, refused.
    const [, payload, signature] = (await hs256({ sub: 'mallory' }, 'HS256', secret)).split('.')
    const header = Buffer.from(JSON.stringify({ alg: 'RS256', kid: rsa.kid })).toString('base64url')
    expect(
      await outcome(auth.userOf(requestWith(`${header}.${payload}.${signature}`), undefined)),
    ).toEqual(REFUSED)
    // An alg neither takes.
    const hs512 = await hs256({ sub: 'mallory' }, 'HS512', secret)
    expect(await outcome(auth.userOf(requestWith(hs512), undefined))).toEqual(REFUSED)
  })

  test('with only a JWKS, an HS256 token is refused whatever it is signed with', async () => {
    const auth = createAuthenticator({ jwks: provider() })
    const token = await hs256({ sub: 'bob' }, 'HS256', new TextEncoder().encode(SECRET))
    expect(await outcome(auth.userOf(requestWith(token), undefined))).toEqual(REFUSED)
  })
})

describe('the user claim and remembering', () => {
  test('AUTH_USER_CLAIM names the user; a token without it is refused', async () => {
    const auth = createAuthenticator({ jwks: provider('email') })
    const withEmail = await providerToken(rsa, 'sub-1', { claims: { email: 'ann@example.com' } })
    expect(await outcome(auth.userOf(requestWith(withEmail), undefined))).toEqual({
      user: 'ann@example.com',
    })
    expect(
      await outcome(auth.userOf(requestWith(await providerToken(rsa, 'sub-2')), undefined)),
    ).toEqual(REFUSED)
    // A user id longer than any the service stores is refused, not cut.
    const long = await providerToken(rsa, 'x', { claims: { email: 'a'.repeat(129) } })
    expect(await outcome(auth.userOf(requestWith(long), undefined))).toEqual(REFUSED)
  })

  test('a verified token is remembered: the key set is not fetched again for it, and it still answers 403 to another user_id', async () => {
    const auth = createAuthenticator({ jwks: provider() })
    const request = requestWith(await providerToken(rsa, 'ann'))
    const before = await jwks.fetches()
    expect(await auth.userOf(request, undefined)).toBe('ann')
    expect(await jwks.fetches()).toBe(before + 1)
    for (let i = 0; i < 3; i++) expect(await auth.userOf(request, 'ann')).toBe('ann')
    expect(await jwks.fetches()).toBe(before + 1)
    expect(await outcome(auth.userOf(request, 'bob'))).toEqual({
      kind: 'forbidden',
      code: undefined,
    })
  })
})

describe('a key server that fails', () => {
  test('not a key set, a 404, or nobody listening: 503 identity_unavailable, never a user', async () => {
    const origin = new URL(jwks.url).origin
    const token = await providerToken(rsa, 'ann')
    for (const url of [
      `${origin}/fetches`,
      `${origin}/no-such-path`,
      'http://127.0.0.1:9/jwks.json',
    ]) {
      const auth = createAuthenticator({ jwks: provider('sub', () => url) })
      expect(await outcome(auth.userOf(requestWith(token), undefined))).toEqual({
        kind: 'unavailable',
        code: 'identity_unavailable',
      })
    }
  })
})
