// The JWT authenticator remembers tokens that verified: remembering must never
// change an answer. A remembered token stops counting at its `exp`, a token
// that differs from a remembered one by a character is verified on its own,
// and a token that failed is refused every time.
import { expect, test } from 'bun:test'
import { SignJWT } from 'jose'
import { createAuthenticator } from '../src/http/auth.ts'

const SECRET = 'auth-tokens-test-secret'
const HOUR_S = 3600

/** A clock the test moves, starting now. */
function testClock() {
  let at = Date.now()
  return {
    now: () => at,
    advance(ms: number) {
      at += ms
    },
  }
}

const tokenFor = (sub: string, expSeconds: number, secret = SECRET) =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub)
    .setExpirationTime(expSeconds)
    .sign(new TextEncoder().encode(secret))

const requestWith = (token: string) =>
  new Request('http://localhost/', { headers: { authorization: `Bearer ${token}` } })

const outcome = (promise: Promise<string>): Promise<{ user?: string; error?: string }> =>
  promise.then(
    (user) => ({ user }),
    (error: Error) => ({ error: error.message }),
  )
const REFUSED = { error: 'The bearer token is not valid or has expired.' }

test('a remembered token counts until its exp and not a moment after', async () => {
  const clock = testClock()
  const auth = createAuthenticator({ jwtSecret: SECRET }, clock)
  const exp = Math.floor(clock.now() / 1000) + HOUR_S
  const request = requestWith(await tokenFor('alice', exp))
  expect(await auth.userOf(request, undefined)).toBe('alice')
  clock.advance(exp * 1000 - clock.now() - 1)
  expect(await auth.userOf(request, 'alice')).toBe('alice')
  clock.advance(1)
  expect(await outcome(auth.userOf(request, undefined))).toEqual(REFUSED)
  // Still refused the next time: an expired token is not remembered again.
  expect(await outcome(auth.userOf(request, undefined))).toEqual(REFUSED)
})

test('a token one character off a remembered one is verified on its own, and refused', async () => {
  const auth = createAuthenticator({ jwtSecret: SECRET })
  const token = await tokenFor('alice', Math.floor(Date.now() / 1000) + HOUR_S)
  expect(await auth.userOf(requestWith(token), undefined)).toBe('alice')
  // A character inside the signature (the last one may only carry padding bits).
  const at = token.length - 10
  const tampered = `${token.slice(0, at)}${token[at] === 'A' ? 'B' : 'A'}${token.slice(at + 1)}`
  expect(await outcome(auth.userOf(requestWith(tampered), undefined))).toEqual(REFUSED)
  expect(await auth.userOf(requestWith(token), undefined)).toBe('alice')
})

test('a token that failed is refused every time, and a remembered one still answers 403 to another user_id', async () => {
  const auth = createAuthenticator({ jwtSecret: SECRET })
  const exp = Math.floor(Date.now() / 1000) + HOUR_S
  const wrong = requestWith(await tokenFor('mallory', exp, 'another-secret'))
  for (let attempt = 0; attempt < 3; attempt++)
    expect(await outcome(auth.userOf(wrong, undefined))).toEqual(REFUSED)
  const right = requestWith(await tokenFor('alice', exp))
  expect(await auth.userOf(right, undefined)).toBe('alice')
  expect(await outcome(auth.userOf(right, 'bob'))).toEqual({
    error: 'The user_id does not match the authenticated user.',
  })
})

test('authenticators do not share what they remember', async () => {
  const token = await tokenFor('alice', Math.floor(Date.now() / 1000) + HOUR_S)
  expect(
    await createAuthenticator({ jwtSecret: SECRET }).userOf(requestWith(token), undefined),
  ).toBe('alice')
  const other = createAuthenticator({ jwtSecret: 'a-different-secret' })
  expect(await outcome(other.userOf(requestWith(token), undefined))).toEqual(REFUSED)
})
