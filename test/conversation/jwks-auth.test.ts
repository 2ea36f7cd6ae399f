// Identity from an identity provider (CONTRACT §22): tokens signed by a key
// of the provider's JWKS, served by a real process on loopback, with the
// issuer, audience and expiry checked. Every attack of the HS256 suite
// (auth.test.ts) again, key rotation without a restart, at most one fetch a
// minute for unknown kids, and a JWKS that stops answering: 503, never 200.
// The minute is passed with bun:test's setSystemTime (jose's key cache reads
// Date.now), only around reads.
import { afterAll, afterEach, describe, expect, setSystemTime, test } from 'bun:test'
import { SignJWT } from 'jose'
import { describeEachBackend } from '../support/backend-apps.ts'
import { dataOf, framesOf, get, newUser, post, textMessage } from '../support/conversation-app.ts'
import {
  bearer,
  type JwksServer,
  jwksEnv,
  type ProviderKey,
  providerKey,
  providerToken,
  startJwksServer,
} from '../support/jwks.ts'

const MINUTE_MS = 60_000

const servers = new Map<string, JwksServer>()
const keys = new Map<string, ProviderKey>()
const key = (name: string) => keys.get(name) as ProviderKey

describeEachBackend(
  async (backend) => {
    const server = await startJwksServer()
    servers.set(backend.name, server)
    for (const [name, alg] of [
      ['rsa', 'RS256'],
      ['ec', 'ES256'],
      ['ed', 'EdDSA'],
      ['next', 'RS256'],
      ['unpublished', 'RS256'],
    ] as const)
      if (!keys.has(name)) keys.set(name, await providerKey(alg, `kid-${name}`))
    await server.publish([key('rsa'), key('ec'), key('ed')])
    return { env: jwksEnv(server) }
  },
  (t, backend) => {
    const jwks = () => servers.get(backend.name) as JwksServer
    afterAll(() => jwks().stop())
    // The clock is only ever moved forward inside a test, and given back after it.
    let clockOffsetMs = 0
    const passTime = (ms: number) => {
      clockOffsetMs += ms
      setSystemTime(new Date(Date.now() + ms))
    }
    afterEach(() => setSystemTime())

    const sendAs = (headers: Record<string, string>, user?: string) =>
      post(
        t.app,
        '/backend-api/f/conversation',
        { ...(user ? { user_id: user } : {}), messages: [textMessage('hi')] },
        headers,
      )
    const listAs = (headers: Record<string, string>) =>
      get(t.app, '/backend-api/conversations', headers)
    /** After a test moved the clock, every later test starts from where it left off. */
    const resumeClock = () => {
      if (clockOffsetMs > 0) setSystemTime(new Date(Date.now() + clockOffsetMs))
    }

    describe('provider tokens', () => {
      test('RS256, ES256 and EdDSA tokens name their sub as the user', async () => {
        for (const name of ['rsa', 'ec', 'ed']) {
          const user = newUser()
          const headers = bearer(await providerToken(key(name), user))
          const response = await sendAs(headers)
          expect(response.status).toBe(200)
          const cid = dataOf<{ conversation_id: string }>(
            framesOf(await response.text())[1],
          ).conversation_id
          const list = (await (await listAs(headers)).json()) as { items: { id: string }[] }
          expect(list.items.map((item) => item.id)).toEqual([cid])
          const other = bearer(await providerToken(key(name), newUser()))
          expect((await get(t.app, `/backend-api/conversation/${cid}`, other)).status).toBe(404)
          // X-User-Id cannot override the token.
          const spoofed = await get(t.app, `/backend-api/conversation/${cid}`, {
            ...other,
            'x-user-id': user,
          })
          expect(spoofed.status).toBe(403)
        }
      })

      test('a body user_id that differs from the token’s user is 403 and stores nothing', async () => {
        const user = newUser()
        const other = newUser()
        const response = await sendAs(bearer(await providerToken(key('ec'), user)), other)
        expect(response.status).toBe(403)
        expect(((await response.json()) as { code: string }).code).toBe('forbidden')
        const rows = await t.db.query('SELECT id FROM users WHERE id = $1 OR id = $2', [
          user,
          other,
        ])
        expect(rows).toEqual([])
      })

      test('every forged, foreign or stale token is 401, stores nothing, and unknown kids fetch nothing more', async () => {
        const user = newUser()
        const rsa = key('rsa')
        const now = Math.floor(Date.now() / 1000)
        const good = await providerToken(rsa, user)
        expect((await listAs(bearer(good))).status).toBe(200)
        const fetchesBefore = await jwks().fetches()
        const [header, payload, signature] = good.split('.') as [string, string, string]
        const claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
        const tampered = `${header}.${Buffer.from(
          JSON.stringify({ ...claims, sub: `${user}-admin` }),
        ).toString('base64url')}.${signature}`
        const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${payload}.`
        // The classic confusion: the public key (as published) used as an HS256 secret.
        const publicPem = Buffer.from(JSON.stringify(rsa.jwk))
        const confused = await new SignJWT({ ...claims })
          .setProtectedHeader({ alg: 'HS256', kid: rsa.kid })
          .sign(publicPem)
        const cases: Record<string, Record<string, string>> = {
          'no header': {},
          'empty bearer': { authorization: 'Bearer' },
          'not a JWT': bearer('not-a-jwt'),
          basic: { authorization: `Basic ${btoa('user:pass')}` },
          'wrong issuer': bearer(await providerToken(rsa, user, { issuer: 'https://evil.test/' })),
          'wrong audience': bearer(await providerToken(rsa, user, { audience: 'another-api' })),
          expired: bearer(await providerToken(rsa, user, { expiresAt: now - 10 })),
          'no exp': bearer(await providerToken(rsa, user, { expiresAt: null })),
          'alg none': bearer(unsigned),
          'HS256 with the public key as secret': bearer(confused),
          'unknown kid': bearer(await providerToken(key('unpublished'), user)),
          "another key under a published key's kid": bearer(
            await providerToken(key('unpublished'), user, { kid: rsa.kid }),
          ),
          'tampered payload': bearer(tampered),
          'no sub': bearer(await providerToken(rsa, undefined)),
          'sub not a string': bearer(
            await providerToken(rsa, undefined, { claims: { sub: 42 } as never }),
          ),
          'only X-User-Id': { 'x-user-id': user },
        }
        for (const [name, headers] of Object.entries(cases)) {
          const send = await sendAs(headers, user)
          expect({ name, status: send.status }).toEqual({ name, status: 401 })
          expect(((await send.json()) as { code: string }).code).toBe('unauthorized')
          expect({ name, status: (await listAs(headers)).status }).toEqual({ name, status: 401 })
        }
        expect(await t.db.query('SELECT id FROM users WHERE id = $1', [user])).toEqual([])
        // Two unknown kids within the minute after the last fetch: no fetch.
        expect(await jwks().fetches()).toBe(fetchesBefore)
      })
    })

    describe('keys that change', () => {
      test('a rotated-in key works after the cooldown without a restart, and a removed one is refused after the refresh', async () => {
        resumeClock()
        const user = newUser()
        const old = await providerToken(key('rsa'), user)
        expect((await listAs(bearer(old))).status).toBe(200)
        await jwks().publish([key('next'), key('ec'), key('ed')])
        const rotated = bearer(await providerToken(key('next'), user))
        // Within the minute after a fetch the new kid is not fetched for...
        const fetches = await jwks().fetches()
        passTime(1_000)
        expect((await listAs(rotated)).status).toBe(401)
        expect(await jwks().fetches()).toBe(fetches)
        // ...after it, once.
        passTime(MINUTE_MS)
        expect((await listAs(rotated)).status).toBe(200)
        expect(await jwks().fetches()).toBe(fetches + 1)
        // The removed key: refused, the remembered token of it as a new one.
        expect((await listAs(bearer(old))).status).toBe(401)
        expect((await listAs(bearer(await providerToken(key('rsa'), user)))).status).toBe(401)
        expect((await listAs(rotated)).status).toBe(200)
      })

      test('a JWKS that does not answer makes tokens 503, never 200, and stores nothing', async () => {
        resumeClock()
        const user = newUser()
        const known = bearer(await providerToken(key('next'), user))
        expect((await listAs(known)).status).toBe(200)
        await jwks().stop()
        // A kid that needs a fetch, after the cooldown: the fetch fails.
        passTime(MINUTE_MS + 1_000)
        const unknown = bearer(await providerToken(key('unpublished'), user))
        const refused = await sendAs(unknown)
        expect(refused.status).toBe(503)
        expect(await refused.json()).toEqual({
          detail: expect.stringContaining('identity provider'),
          code: 'identity_unavailable',
        })
        // Keys still fresh in the cache are still checked with.
        expect((await listAs(known)).status).toBe(200)
        // Past the cache's age every token needs the JWKS again: 503, the remembered one too.
        passTime(10 * MINUTE_MS + 1_000)
        for (const headers of [known, bearer(await providerToken(key('next'), user))]) {
          expect((await listAs(headers)).status).toBe(503)
          expect((await sendAs(headers)).status).toBe(503)
        }
        expect(await t.db.query('SELECT id FROM users WHERE id = $1', [user])).toEqual([])
      })
    })
  },
)
