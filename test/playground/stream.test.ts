// The playground's stream reader (plugins/playground/stream.js), the code the
// page runs: SSE events parsed from a body however its bytes are split, and
// the v1 items of a real stream of the service applied to a turn (text, status,
// finish, token, inputs, error, title, [DONE]), plus the v1 short form.
import { describe, expect, test } from 'bun:test'
import { applyEvent, newTurn, sseEvents } from '../../plugins/playground/stream.js'
import { embeddedBackend } from '../support/backends.ts'
import { conversationApp, newUser, post, textMessage } from '../support/conversation-app.ts'

/** A body that delivers text in the given pieces. */
function bodyOf(pieces: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  return new ReadableStream({
    start(controller) {
      for (const piece of pieces) controller.enqueue(encoder.encode(piece))
      controller.close()
    },
  })
}

async function eventsOf(pieces: string[]) {
  const events = []
  for await (const event of sseEvents(bodyOf(pieces))) events.push(event)
  return events
}

describe('sseEvents', () => {
  const text =
    'event: delta_encoding\ndata: "v1"\n\n: ping\n\ndata: {"a":1}\n\nevent: delta\r\ndata: {"b":"x\\ny"}\r\n\r\ndata: [DONE]\n\n'
  const expected = [
    { event: 'delta_encoding', data: '"v1"' },
    { event: 'message', data: '{"a":1}' },
    { event: 'delta', data: '{"b":"x\\ny"}' },
    { event: 'message', data: '[DONE]' },
  ]

  test('parses events, skipping comments, with LF or CRLF line ends', async () => {
    expect(await eventsOf([text])).toEqual(expected)
  })

  test('gives the same events whatever the chunk boundaries, even inside a character', async () => {
    const withUnicode = `${text}data: {"c":"é✓"}\n\n`
    const whole = await eventsOf([withUnicode])
    const bytes = new TextEncoder().encode(withUnicode)
    for (const size of [1, 2, 3, 7, 64]) {
      const pieces: Uint8Array[] = []
      for (let at = 0; at < bytes.length; at += size) pieces.push(bytes.slice(at, at + size))
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          for (const piece of pieces) controller.enqueue(piece)
          controller.close()
        },
      })
      const events = []
      for await (const event of sseEvents(body)) events.push(event)
      expect(events).toEqual(whole)
    }
  })

  test('a last event without its blank line still counts; a block without data does not', async () => {
    expect(await eventsOf(['event: x\n\ndata: end'])).toEqual([{ event: 'message', data: 'end' }])
  })
})

describe('applyEvent over a real stream of the service', () => {
  test('the turn ends with the streamed text, status, finish, token and input', async () => {
    const { app } = await conversationApp({ backend: embeddedBackend })
    const response = await post(app, '/backend-api/f/conversation', {
      user_id: newUser(),
      messages: [textMessage('Tell me about streams', 'input-1')],
    })
    const turn = newTurn()
    const texts: string[] = []
    for await (const event of sseEvents(response.body as ReadableStream<Uint8Array>)) {
      applyEvent(turn, event)
      texts.push(turn.text)
    }
    expect(turn.done).toBe(true)
    expect(turn.conversationId).toMatch(/^[0-9a-f-]{36}$/)
    expect(turn.token?.split('.')).toHaveLength(3)
    expect(turn.inputs.map((message: { id: string }) => message.id)).toEqual(['input-1'])
    expect(turn.text).toContain('Tell me about streams')
    expect(turn.status).toBe('finished_successfully')
    expect(turn.finish).toBe('stop')
    expect(turn.error).toBeUndefined()
    // The text grew item by item.
    expect(new Set(texts).size).toBeGreaterThan(3)
  })

  test('an error item, a title and the v1 short form', () => {
    const turn = newTurn()
    const apply = (event: string, data: unknown) =>
      applyEvent(turn, { event, data: JSON.stringify(data) })
    apply('delta', { p: '', o: 'add', v: { message: { id: 'm1', content: { parts: [''] } } } })
    apply('delta', { p: '/message/content/parts/0', o: 'append', v: 'Hel' })
    expect(apply('delta', { v: 'lo' })).toBe(true)
    apply('message', { type: 'error', error: 'The model failed.', detail: 'x' })
    apply('message', { type: 'title_generation', title: 'Greetings' })
    expect(applyEvent(turn, { event: 'message', data: 'not json' })).toBe(false)
    expect(turn).toMatchObject({
      messageId: 'm1',
      text: 'Hello',
      error: 'The model failed.',
      title: 'Greetings',
    })
  })
})
