// Identity with AUTH_JWT_SECRET set (CONTRACT §2): only a verified HS256 token
// counts, its `sub` is the user, and a differing body user_id is 403.
import { describe, expect, test } from 'bun:test'
import { SignJWT } from 'jose'
import { describeEachBackend } from '../support/backend-apps.ts'
import { dataOf, framesOf, get, newUser, post, textMessage } from '../support/conversation-app.ts'

const SECRET = 'jwt-test-secret-of-at-least-32-bytes'
describeEachBackend({ env: { AUTH_JWT_SECRET: SECRET } }, (t) => {
  const token = (sub: string, secret = SECRET, expiresAt: string | number = '1h', alg = 'HS256') =>
    new SignJWT({})
      .setProtectedHeader({ alg })
      .setSubject(sub)
      .setIssuedAt()
      .setExpirationTime(expiresAt)
      .sign(new TextEncoder().encode(secret))

  /** A correctly signed token that never expires: refused, since a leak would last forever. */
  const tokenWithoutExpiry = (sub: string) =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(sub)
      .setIssuedAt()
      .sign(new TextEncoder().encode(SECRET))

  const bearer = async (sub: string) => ({ authorization: `Bearer ${await token(sub)}` })

  describe('JWT mode', () => {
    test('the token’s sub is the user of sends and reads', async () => {
      const user = newUser()
      const response = await post(
        t.app,
        '/backend-api/f/conversation',
        { messages: [textMessage('hi')] },
        await bearer(user),
      )
      expect(response.status).toBe(200)
      const cid = dataOf<{ conversation_id: string }>(
        framesOf(await response.text())[1],
      ).conversation_id
      const list = await get(t.app, '/backend-api/conversations', await bearer(user))
      expect(((await list.json()) as { items: { id: string }[] }).items.map((i) => i.id)).toEqual([
        cid,
      ])
      const detail = await get(t.app, `/backend-api/conversation/${cid}`, await bearer(user))
      expect(detail.status).toBe(200)
      // X-User-Id cannot override the token: naming another user is refused.
      const spoofed = await get(t.app, `/backend-api/conversation/${cid}`, {
        ...(await bearer(newUser())),
        'x-user-id': user,
      })
      expect(spoofed.status).toBe(403)
      const stranger = await get(t.app, `/backend-api/conversation/${cid}`, await bearer(newUser()))
      expect(stranger.status).toBe(404)
    })

    test('a body user_id that differs from sub is 403 and stores nothing', async () => {
      const user = newUser()
      const other = newUser()
      const response = await post(
        t.app,
        '/backend-api/f/conversation',
        { user_id: other, messages: [textMessage('hi')] },
        await bearer(user),
      )
      expect(response.status).toBe(403)
      expect(((await response.json()) as { code: string }).code).toBe('forbidden')
      const rows = await t.db.query('SELECT id FROM users WHERE id = $1 OR id = $2', [user, other])
      expect(rows).toEqual([])
    })

    test('missing, malformed, expired, unexpiring, wrongly signed or unsigned tokens are 401', async () => {
      const user = newUser()
      const now = Math.floor(Date.now() / 1000)
      const unsigned = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(
        JSON.stringify({ sub: user, exp: now + 3600 }),
      ).toString('base64url')}.`
      const cases: Record<string, string>[] = [
        {},
        { authorization: 'Bearer' },
        { authorization: 'Bearer not-a-jwt' },
        { authorization: `Basic ${btoa('user:pass')}` },
        { authorization: `Bearer ${await token(user, SECRET, now - 10)}` },
        { authorization: `Bearer ${await tokenWithoutExpiry(user)}` },
        { authorization: `Bearer ${await token(user, 'wrong-secret')}` },
        { authorization: `Bearer ${await token(user, SECRET, '1h', 'HS512')}` },
        { authorization: `Bearer ${unsigned}` },
        { 'x-user-id': user },
      ]
      for (const headers of cases) {
        const send = await post(
          t.app,
          '/backend-api/f/conversation',
          { user_id: user, messages: [textMessage('x')] },
          headers,
        )
        expect(send.status).toBe(401)
        const body = (await send.json()) as { code: string; detail: string }
        expect(body.code).toBe('unauthorized')
        expect((await get(t.app, '/backend-api/conversations', headers)).status).toBe(401)
      }
      expect(await t.db.query('SELECT id FROM users WHERE id = $1', [user])).toEqual([])
    })
  })
})
