// POST /backend-api/f/conversation/resume (CONTRACT §4.4): every item exactly
// once from any offset, during the turn and after it; bad tokens are 401.
import { describe, expect, test } from 'bun:test'
import { SignJWT } from 'jose'
import { suiteApp } from '../support/backend-apps.ts'
import { appBackends } from '../support/backends.ts'
import {
  dataOf,
  framesOf,
  newUser,
  post,
  sendAndRead,
  type TestApp,
  textMessage,
} from '../support/conversation-app.ts'
import { slowLocalModel } from '../support/test-models.ts'

const RESUME = '/backend-api/f/conversation/resume'
const SECRET = 'test-resume-secret'

for (const backend of appBackends())
  describe(backend.name, () => {
    const t = suiteApp({ backend })
    const slow = suiteApp({ backend, model: slowLocalModel(15) })

    async function finishedTurn(app = t) {
      const user = newUser()
      const sent = await sendAndRead(app.app, {
        user_id: user,
        messages: [textMessage('resume me please')],
      })
      const { token, conversation_id } = dataOf<{ token: string; conversation_id: string }>(
        sent.frames[1],
      )
      return { user, token, cid: conversation_id, sent }
    }

    const resume = (
      app: TestApp,
      token: string,
      body: unknown,
      headers: Record<string, string> = {},
    ) => post(app.app, RESUME, body, { 'x-conduit-token': token, ...headers })

    describe('after the turn ended', () => {
      test('offset k yields items k… exactly, for every k', async () => {
        const { token, cid, sent } = await finishedTurn()
        for (let k = 0; k <= sent.frames.length; k++) {
          const response = await resume(t, token, { conversation_id: cid, offset: k })
          expect(response.status).toBe(200)
          expect(response.headers.get('content-type')).toBe('text/event-stream')
          expect(await response.text()).toBe(
            sent.frames
              .slice(k)
              .map((f) => f.raw)
              .join(''),
          )
        }
      })

      test('offset defaults to 0', async () => {
        const { token, cid, sent } = await finishedTurn()
        const response = await resume(t, token, { conversation_id: cid })
        expect(await response.text()).toBe(sent.text)
      })

      test('an offset past the end is 422', async () => {
        const { token, cid, sent } = await finishedTurn()
        const response = await resume(t, token, {
          conversation_id: cid,
          offset: sent.frames.length + 1,
        })
        expect(response.status).toBe(422)
      })
    })

    test('during the turn: received 0…k−1 plus resume at k gives every item exactly once', async () => {
      const user = newUser()
      const response = await post(slow.app, '/backend-api/f/conversation', {
        user_id: user,
        messages: [textMessage('a long enough message to produce many chunks for this test')],
      })
      const reader = (response.body as ReadableStream<Uint8Array>).getReader()
      let received = ''
      while (framesOf(received).length < 7) {
        const { value, done } = await reader.read()
        if (done) break
        received += new TextDecoder().decode(value)
      }
      await reader.cancel()
      // Only whole frames count as received.
      const got = framesOf(received.slice(0, received.lastIndexOf('\n\n') + 2))
      const { token, conversation_id } = dataOf<{ token: string; conversation_id: string }>(got[1])
      const resumed = await resume(slow, token, { conversation_id, offset: got.length })
      const rest = framesOf(await resumed.text())
      const all = [...got, ...rest]
      expect(all.at(-1)?.data).toBe('[DONE]')
      expect(all.filter((f) => f.data === '[DONE]')).toHaveLength(1)
      const full = await resume(slow, token, { conversation_id, offset: 0 })
      expect(all.map((f) => f.raw).join('')).toBe(await full.text())
    })

    describe('refused', () => {
      test('no token is 401', async () => {
        const { cid } = await finishedTurn()
        const response = await post(t.app, RESUME, { conversation_id: cid, offset: 0 })
        expect(response.status).toBe(401)
        expect(((await response.json()) as { code: string }).code).toBe('unauthorized')
      })

      test('a garbage token is 401', async () => {
        const { cid } = await finishedTurn()
        expect((await resume(t, 'not.a.jwt', { conversation_id: cid })).status).toBe(401)
      })

      test('a token signed with another secret is 401', async () => {
        const { cid, sent, user } = await finishedTurn()
        const aid = dataOf<{ v: { message: { id: string } } }>(sent.frames[3]).v.message.id
        const forged = await new SignJWT({ conversation_id: cid, message_id: aid })
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject(user)
          .setIssuedAt()
          .setExpirationTime('2h')
          .sign(new TextEncoder().encode('another-secret'))
        expect((await resume(t, forged, { conversation_id: cid })).status).toBe(401)
      })

      test('an expired token is 401', async () => {
        const { cid, sent, user } = await finishedTurn()
        const aid = dataOf<{ v: { message: { id: string } } }>(sent.frames[3]).v.message.id
        const expired = await new SignJWT({ conversation_id: cid, message_id: aid })
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject(user)
          .setIssuedAt(Math.floor(Date.now() / 1000) - 7300)
          .setExpirationTime(Math.floor(Date.now() / 1000) - 100)
          .sign(new TextEncoder().encode(SECRET))
        expect((await resume(t, expired, { conversation_id: cid })).status).toBe(401)
      })

      test('another conversation’s id is 401', async () => {
        const { token } = await finishedTurn()
        const other = await finishedTurn()
        expect((await resume(t, token, { conversation_id: other.cid })).status).toBe(401)
      })

      test('another user is 401, named by header or body', async () => {
        const { token, cid, user } = await finishedTurn()
        const byHeader = await resume(
          t,
          token,
          { conversation_id: cid },
          { 'x-user-id': newUser() },
        )
        expect(byHeader.status).toBe(401)
        const byBody = await resume(t, token, { conversation_id: cid, user_id: newUser() })
        expect(byBody.status).toBe(401)
        const own = await resume(t, token, { conversation_id: cid, user_id: user })
        expect(own.status).toBe(200)
      })

      test('a stream that is no longer kept is 404', async () => {
        const { cid, user } = await finishedTurn()
        const token = await new SignJWT({ conversation_id: cid, message_id: 'never-streamed' })
          .setProtectedHeader({ alg: 'HS256' })
          .setSubject(user)
          .setIssuedAt()
          .setExpirationTime('2h')
          .sign(new TextEncoder().encode(SECRET))
        const response = await resume(t, token, { conversation_id: cid })
        expect(response.status).toBe(404)
      })

      test('bad offsets and conversation ids are 422', async () => {
        const { token, cid } = await finishedTurn()
        for (const body of [
          { conversation_id: cid, offset: -1 },
          { conversation_id: cid, offset: 1.5 },
          { conversation_id: cid, offset: '3' },
          { conversation_id: 'nope', offset: 0 },
          { offset: 0 },
        ])
          expect((await resume(t, token, body)).status).toBe(422)
      })
    })
  })
