// The access log and request ids of the real application: one JSON line per
// request with method, route template, status, duration and request id; the
// caller's x-request-id kept when sane and returned, else a new one; probes at
// debug; error statuses as answered; never message text or a token.
import { describe, expect, test } from 'bun:test'
import { suiteApp } from '../support/backend-apps.ts'
import { appBackends } from '../support/backends.ts'
import { get, newUser, post, sendAndRead, textMessage } from '../support/conversation-app.ts'
import { type CollectedLog, collectingLogger, type LogLine } from '../support/log-lines.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The access line of a response, once written (onAfterResponse runs after it is handed over). */
async function loggedAfter(logged: CollectedLog, response: Response): Promise<LogLine> {
  if (!response.bodyUsed) await response.arrayBuffer()
  const id = response.headers.get('x-request-id')
  return logged.waitFor((line) => line.msg === 'request' && line.request_id === id)
}

for (const backend of appBackends())
  describe(backend.name, () => {
    const logged = collectingLogger('debug')
    const t = suiteApp({ backend, log: logged.log })

    test('a request without an id gets a new UUID, returned and logged with route and status', async () => {
      const user = newUser()
      const response = await get(t.app, `/backend-api/conversations?user_id=${user}`)
      expect(response.status).toBe(200)
      const id = response.headers.get('x-request-id') ?? ''
      expect(id).toMatch(UUID)
      const line = await loggedAfter(logged, response)
      expect(line).toMatchObject({
        level: 'info',
        method: 'GET',
        route: '/backend-api/conversations',
        status: 200,
        request_id: id,
      })
      expect(typeof line.duration_ms).toBe('number')
      expect(typeof line.time).toBe('string')
    })

    test("the caller's request id is kept and returned", async () => {
      const response = await get(t.app, `/backend-api/conversations?user_id=${newUser()}`, {
        'x-request-id': 'lb-1f3a.9',
      })
      expect(response.headers.get('x-request-id')).toBe('lb-1f3a.9')
      expect((await loggedAfter(logged, response)).request_id).toBe('lb-1f3a.9')
    })

    test('a hostile or oversized request id is replaced, never echoed', async () => {
      for (const hostile of ['x'.repeat(129), 'a b', '<script>', 'id"},{"level":"fatal', '']) {
        const response = await get(t.app, '/health', { 'x-request-id': hostile })
        const id = response.headers.get('x-request-id') ?? ''
        expect(id).toMatch(UUID)
        await response.arrayBuffer()
      }
      expect(logged.raw()).not.toContain('<script>')
      expect(logged.raw()).not.toContain('"level":"fatal"')
    })

    test('the route is the template, not the path with its ids', async () => {
      const user = newUser()
      const sent = await sendAndRead(t.app, { user_id: user, messages: [textMessage('hi')] })
      const cid = sent.frames
        .map((frame) => frame.data)
        .find((data) => data.includes('conversation_id'))
      const conversationId = (JSON.parse(cid ?? '{}') as { conversation_id: string })
        .conversation_id
      const response = await get(t.app, `/backend-api/conversation/${conversationId}`, {
        'x-user-id': user,
      })
      const line = await loggedAfter(logged, response)
      expect(line.route).toBe('/backend-api/conversation/:conversation_id')
      expect(JSON.stringify(line)).not.toContain(conversationId)
    })

    test('errors are logged with the status the client got', async () => {
      const invalid = await post(t.app, '/backend-api/f/conversation', { user_id: newUser() })
      expect(invalid.status).toBe(422)
      expect(await loggedAfter(logged, invalid)).toMatchObject({
        route: '/backend-api/f/conversation',
        status: 422,
      })
      const missing = await get(t.app, '/no/such/route/8c1d')
      expect(missing.status).toBe(404)
      const line = await loggedAfter(logged, missing)
      // Unmatched paths share one route label: a scanner cannot grow the label set.
      expect(line).toMatchObject({ route: '(unmatched)', status: 404 })
      expect(JSON.stringify(line)).not.toContain('8c1d')
    })

    test('probes are logged at debug, everything else at info', async () => {
      const response = await get(t.app, '/health')
      expect((await loggedAfter(logged, response)).level).toBe('debug')
    })

    test('message text never reaches the log', async () => {
      const secretText = `confidential-${newUser()}`
      const { response } = await sendAndRead(t.app, {
        user_id: newUser(),
        messages: [textMessage(`please keep ${secretText} private`)],
      })
      await loggedAfter(logged, response)
      expect(logged.raw()).not.toContain(secretText)
    })
  })
