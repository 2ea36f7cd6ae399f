// An identity provider for tests (CONTRACT §22): key pairs made with jose,
// tokens signed with them, and test/support/jwks-server.ts started as a real
// process on loopback to publish the public halves. Killed by stop() (by its
// own pid).
import { join } from 'node:path'
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose'
import { spawnListening } from './listening-process.ts'

const SCRIPT = join(import.meta.dir, 'jwks-server.ts')
const START_WITHIN_MS = 15_000

export const TEST_ISSUER = 'https://id.example.test/'
export const TEST_AUDIENCE = 'conduit-api'

export type ProviderAlg = 'RS256' | 'ES256' | 'EdDSA'

/** One of the provider's signing keys: the private half signs, `jwk` is what the JWKS publishes. */
export interface ProviderKey {
  alg: ProviderAlg
  kid: string
  privateKey: CryptoKey
  publicKey: CryptoKey
  jwk: JWK
}

export async function providerKey(alg: ProviderAlg, kid: string): Promise<ProviderKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true })
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' }
  return { alg, kid, privateKey, publicKey, jwk }
}

export interface TokenOptions {
  issuer?: string
  audience?: string
  /** Seconds since the epoch, or a jose time span such as '1h'; null = no exp claim. */
  expiresAt?: number | string | null
  /** The header's kid; the key's own by default. */
  kid?: string
  /** Claims besides iss, aud and exp (sub among them). */
  claims?: JWTPayload
}

/** A token the provider would issue for `user` (its sub), signed with `key`, changed by `options`. */
export function providerToken(
  key: ProviderKey,
  user: string | undefined,
  options: TokenOptions = {},
): Promise<string> {
  let jwt = new SignJWT({ ...options.claims })
    .setProtectedHeader({ alg: key.alg, kid: options.kid ?? key.kid })
    .setIssuer(options.issuer ?? TEST_ISSUER)
    .setAudience(options.audience ?? TEST_AUDIENCE)
    .setIssuedAt()
  if (user !== undefined) jwt = jwt.setSubject(user)
  const expiresAt = options.expiresAt === undefined ? '1h' : options.expiresAt
  if (expiresAt !== null) jwt = jwt.setExpirationTime(expiresAt)
  return jwt.sign(key.privateKey)
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

export interface JwksServer {
  /** The JWKS URL (AUTH_JWKS_URL). */
  url: string
  /** Publishes exactly these keys from now on. */
  publish(keys: ProviderKey[]): Promise<void>
  /** How many times the key set was fetched. */
  fetches(): Promise<number>
  stop(): Promise<void>
}

export async function startJwksServer(): Promise<JwksServer> {
  const server = await spawnListening(SCRIPT, {}, 'the JWKS server', START_WITHIN_MS)
  const origin = `http://127.0.0.1:${server.port}`
  return {
    url: `${origin}/jwks.json`,
    async publish(keys) {
      const response = await fetch(`${origin}/keys`, {
        method: 'PUT',
        body: JSON.stringify({ keys: keys.map((key) => key.jwk) }),
      })
      if (response.status !== 204) throw new Error(`publishing keys: HTTP ${response.status}`)
    },
    fetches: async () =>
      ((await (await fetch(`${origin}/fetches`)).json()) as { fetches: number }).fetches,
    stop: server.stop,
  }
}

/** The environment of a service that takes this provider's tokens. */
export const jwksEnv = (server: JwksServer, extra: Record<string, string> = {}) => ({
  AUTH_JWKS_URL: server.url,
  AUTH_ISSUER: TEST_ISSUER,
  AUTH_AUDIENCE: TEST_AUDIENCE,
  ...extra,
})
