// Over a real loopback port: a client that disconnects mid-stream does not stop
// or lose the turn, but its subscription to the turn's log ends then, and a
// quiet stream gets `: ping` keepalives.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { localReply } from '../../src/conversation/model/local.ts'
import { type ConversationObserver, silentObserver } from '../../src/conversation/turn/observer.ts'
import { suiteApp } from '../support/backend-apps.ts'
import { appBackends } from '../support/backends.ts'
import { framesOf, newUser, textMessage } from '../support/conversation-app.ts'
import { slowLocalModel } from '../support/test-models.ts'

for (const backend of appBackends())
  describe(backend.name, () => {
    let base: string
    /** What the service reported, in order: `stream closed` and `turn finished`. */
    const reported: string[] = []
    let streamClosed: () => void = () => {}
    const observer: ConversationObserver = {
      ...silentObserver,
      streamClosed() {
        reported.push('stream closed')
        streamClosed()
      },
      turnFinished() {
        reported.push('turn finished')
      },
    }
    const t = suiteApp({
      backend,
      model: slowLocalModel(40),
      env: { SSE_KEEPALIVE_MS: '25' },
      observer,
    })
    beforeAll(() => {
      t.app.listen({ port: 0, hostname: '127.0.0.1' })
      base = `http://127.0.0.1:${t.app.server?.port}`
    })
    afterAll(() => t.app.stop(true))

    async function readUntil(
      reader: { read(): Promise<{ value?: Uint8Array; done: boolean }> },
      enough: (text: string) => boolean,
    ) {
      let text = ''
      const decoder = new TextDecoder()
      while (!enough(text)) {
        const { value, done } = await reader.read()
        if (done) break
        text += decoder.decode(value, { stream: true })
      }
      return text
    }

    test('a disconnect after a few items still stores the whole reply', async () => {
      const user = newUser()
      const message = 'please keep going after I hang up on you'
      const abort = new AbortController()
      const response = await fetch(`${base}/backend-api/f/conversation`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user_id: user, messages: [textMessage(message)] }),
        signal: abort.signal,
      })
      // biome-ignore lint/style/noNonNullAssertion: a 200 stream always has a body
      const reader = response.body!.getReader()
      const received = await readUntil(reader, (text) => framesOf(text).length >= 7)
      reported.length = 0
      const closed = new Promise<void>((resolve) => {
        streamClosed = resolve
      })
      abort.abort()
      // The stream's read of the log ends with the connection, not with the turn.
      await closed
      expect(reported).toEqual(['stream closed'])
      const frames = framesOf(received)
      const cid = (JSON.parse(frames[1]?.data ?? '{}') as { conversation_id: string })
        .conversation_id
      expect(received).not.toContain('[DONE]')

      const expected = localReply([{ role: 'user', content: message }])
      // The turn goes on without its listener; once it is over, the reply is stored.
      await t.conversations.whenIdle()
      const res = await fetch(`${base}/backend-api/conversation/${cid}`, {
        headers: { 'x-user-id': user },
      })
      const body = (await res.json()) as {
        messages: { role: string; content: { parts: string[] } }[]
      }
      const stored = body.messages.find((m) => m.role === 'assistant')?.content.parts[0]
      expect(stored).toBe(expected)
      expect(reported).toEqual(['stream closed', 'turn finished'])
    })

    test('a quiet stream carries `: ping` comments, which are not items', async () => {
      const response = await fetch(`${base}/backend-api/f/conversation`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          user_id: newUser(),
          messages: [textMessage('ping me while you think')],
        }),
      })
      const text = await response.text()
      expect(text).toContain(': ping\n\n')
      const frames = framesOf(text)
      expect(frames[0]?.raw).toBe('event: delta_encoding\ndata: "v1"\n\n')
      expect(frames.at(-1)?.data).toBe('[DONE]')
      // Pings only ever sit between whole items.
      expect(text.replace(/: ping\n\n/g, '')).toBe(frames.map((f) => f.raw).join(''))
    })

    test('an oversized body over a real connection is a JSON 413', async () => {
      const response = await fetch(`${base}/backend-api/f/conversation`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          user_id: newUser(),
          messages: [textMessage('x'.repeat(1_500_000))],
        }),
      })
      expect(response.status).toBe(413)
      expect(await response.json()).toEqual({
        detail: 'The request body is larger than 1 MB.',
        code: 'payload_too_large',
      })
    })

    test('a chunked body with no length is cut off at 1 MB', async () => {
      const chunk = new TextEncoder().encode('x'.repeat(64 * 1024))
      let sent = 0
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          // Bounded: at most 4 MB, far past the limit.
          if (sent >= 64) return controller.close()
          sent++
          controller.enqueue(chunk)
        },
      })
      const response = await fetch(`${base}/backend-api/f/conversation`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      expect(response.status).toBe(413)
      expect(((await response.json()) as { code: string }).code).toBe('payload_too_large')
    })
  })
