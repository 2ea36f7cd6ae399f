// The synchronous HS256 signer (src/hmac-key.ts) writes what jose's SignJWT
// writes for the same claims, byte for byte, and jose verifies it; a token
// signed with another secret, or altered, is refused. Resume tokens
// (stream/resume-token.ts) are signed with it on every turn, conduit and
// file URL tokens with it too.
import { expect, test } from 'bun:test'
import { jwtVerify, SignJWT } from 'jose'
import { createConduitTokens } from '../src/conversation/conduit-token.ts'
import { createResumeTokens } from '../src/conversation/stream/resume-token.ts'
import { hs256Signer, importHs256Key } from '../src/hmac-key.ts'

const SECRET = 'a-test-secret-of-at-least-32-bytes!'

test('the signer writes the bytes jose signs for the same claims, and jose verifies them', async () => {
  const iat = 1_800_000_000
  const claims = {
    conversation_id: 'c-ü-1',
    message_id: 'm/1+2',
    sub: 'user"1',
    iat,
    exp: iat + 7200,
  }
  const ours = hs256Signer(SECRET)(claims)
  const jose = await new SignJWT({ conversation_id: 'c-ü-1', message_id: 'm/1+2' })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setSubject('user"1')
    .setIssuedAt(iat)
    .setExpirationTime(iat + 7200)
    .sign(await importHs256Key(SECRET))
  expect(ours).toBe(jose)
  const { payload, protectedHeader } = await jwtVerify(ours, await importHs256Key(SECRET), {
    algorithms: ['HS256'],
    currentDate: new Date(iat * 1000),
  })
  expect(protectedHeader).toEqual({ alg: 'HS256', typ: 'JWT' })
  expect(payload).toEqual(claims)
})

test('a token signed with another secret, or altered, is refused', async () => {
  const iat = Math.floor(Date.now() / 1000)
  const claims = { sub: 'u', iat, exp: iat + 60 }
  const key = await importHs256Key(SECRET)
  const other = hs256Signer(`${SECRET}x`)(claims)
  await expect(jwtVerify(other, key, { algorithms: ['HS256'] })).rejects.toThrow()
  const [header, , signature] = hs256Signer(SECRET)(claims).split('.')
  const forged = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: 'v' })).toString('base64url')}.${signature}`
  await expect(jwtVerify(forged, key, { algorithms: ['HS256'] })).rejects.toThrow()
})

test('a resume token names its turn and is the same bytes for the same claims and time', async () => {
  const tokens = createResumeTokens(SECRET)
  const claims = { userId: 'u-1', conversationId: 'c-1', messageId: 'm-1' }
  const now = Date.now() / 1000
  const token = tokens.sign(claims, now)
  expect(tokens.sign(claims, now)).toBe(token)
  expect(await tokens.verify(token)).toEqual(claims)
  await expect(createResumeTokens(`${SECRET}x`).verify(token)).rejects.toMatchObject({
    kind: 'unauthenticated',
  })
})

test('a conduit token verifies with the secret, names its user and is good for 10 minutes', async () => {
  const token = createConduitTokens(SECRET)('u-1')
  const { payload } = await jwtVerify(token, await importHs256Key(SECRET), {
    algorithms: ['HS256'],
  })
  expect(payload).toMatchObject({ purpose: 'conduit', sub: 'u-1' })
  expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBe(600)
})
