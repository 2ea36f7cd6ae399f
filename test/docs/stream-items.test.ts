// The reply stream's items in the API document (CONTRACT §4.2-§4.3, §9-§11):
// the send route's text/event-stream answer lists one schema per item kind,
// and every item of real streams (a first turn with its title, a turn of two
// inputs, a regenerated reply, a model failing mid-reply) matches exactly one.
import { expect, test } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
import { ModelError } from '../../src/conversation/model/provider.ts'
import { StreamEvents } from '../../src/conversation/stream/stream-schemas.ts'
import { call } from '../docstore/harness.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationApp,
  conversationIdOf,
  type Frame,
  newUser,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'
import { startFakeOpenAi } from '../support/fake-openai.ts'
import { stdioTestServer } from '../support/mcp-servers.ts'
import { DETAIL_KEYS } from '../support/transfer.ts'

interface Schema {
  title?: string
  oneOf?: Schema[]
  properties?: Record<string, Schema>
  items?: Schema
  enum?: unknown[]
}
interface Operation {
  requestBody?: { content: Record<string, { schema: Schema }> }
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>
}
interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>
}

/** A frame as a client reads it: its event line and its parsed data (`[DONE]` stays text). */
const eventOf = (frame: Frame) => ({
  ...(frame.event === undefined ? {} : { event: frame.event }),
  data: frame.data === '[DONE]' ? frame.data : JSON.parse(frame.data),
})

/** The items of a turn's thoughts and tool messages (CONTRACT §21). */
const STEP_KINDS: (string | undefined)[] = [
  'step message add',
  'thoughts append',
  'step completion',
]

const matchingKinds = (frame: Frame) =>
  StreamEvents.filter((schema) => Value.Check(schema, eventOf(frame))).map((schema) => schema.title)

describeEachBackend({}, (t, backend) => {
  test('the send route documents one schema per item kind, and its new body fields', async () => {
    const { body: doc } = await call<OpenApiDocument>(t.app, 'GET', '/docs/json')
    const send = doc.paths['/backend-api/f/conversation']?.post
    const events = send?.responses['200']?.content?.['text/event-stream']?.schema.oneOf ?? []
    expect(events.map((schema) => schema.title)).toEqual([
      'delta_encoding',
      'resume_conversation_token',
      'input_message',
      'assistant message add',
      'step message add',
      'thoughts append',
      'step completion',
      'message_marker',
      'append',
      'error',
      'completion',
      'title_generation',
      'message_stream_complete',
      '[DONE]',
    ])
    const error = events.find((schema) => schema.title === 'error')
    expect(Object.keys(error?.properties?.data?.properties ?? {})).toContain('error')

    const body = send?.requestBody?.content['application/json']?.schema
    expect(Object.keys(body?.properties ?? {})).toEqual(
      expect.arrayContaining(['parent_message_id', 'action', 'messages']),
    )
    expect(body?.properties?.action?.enum).toEqual(['next', 'variant'])
    expect(Object.keys(body?.properties?.messages?.items?.properties ?? {})).toEqual(
      expect.arrayContaining(['role', 'author']),
    )
    const detail =
      doc.paths['/backend-api/conversation/{conversation_id}']?.get?.responses['200']?.content?.[
        'application/json'
      ]?.schema
    expect(Object.keys(detail?.properties ?? {})).toEqual(DETAIL_KEYS)
  })

  test('every item of real streams matches exactly one item schema', async () => {
    const user = newUser()
    const first = await sendAndRead(t.app, {
      user_id: user,
      messages: [textMessage('first', 'i1')],
    })
    const cid = conversationIdOf(first.frames)
    const two = await sendAndRead(t.app, {
      user_id: user,
      conversation_id: cid,
      messages: [textMessage('two', 'i2'), textMessage('inputs', 'i3')],
    })
    const variant = await sendAndRead(t.app, {
      user_id: user,
      conversation_id: cid,
      action: 'variant',
      messages: [textMessage('inputs', 'i3')],
    })
    const failing = await conversationApp({
      backend,
      model: {
        slug: 'failing',
        async *stream() {
          yield 'half '
          throw new ModelError('The model broke.')
        },
      },
    })
    const failed = await sendAndRead(failing.app, {
      user_id: user,
      messages: [textMessage('break')],
    })
    const seen = new Set<string | undefined>()
    for (const { frames } of [first, two, variant, failed])
      for (const frame of frames) {
        const kinds = matchingKinds(frame)
        expect({ frame: frame.raw, kinds: kinds.length }).toEqual({ frame: frame.raw, kinds: 1 })
        seen.add(kinds[0])
      }
    // Every kind was seen (the stop's completion is the same kind as the others) but a
    // turn's steps, which the next test's model makes.
    expect([...seen].sort()).toEqual(
      StreamEvents.map((schema) => schema.title)
        .filter((title) => !STEP_KINDS.includes(title))
        .sort(),
    )
  })

  test('every item of a turn that reasons and calls tools matches exactly one item schema', async () => {
    const fake = await startFakeOpenAi('slow', { chunkDelayMs: 1 })
    const app = await conversationApp({
      backend,
      env: {
        MODELS: JSON.stringify([
          {
            slug: 'thinker',
            provider: 'openai',
            model: 'reason-tools',
            base_url: fake.baseUrl,
            tools: true,
          },
        ]),
        MCP_SERVERS: JSON.stringify([stdioTestServer('local')]),
      },
      tools: true,
    })
    try {
      const turn = await sendAndRead(app.app, {
        user_id: newUser(),
        messages: [textMessage('call:echo call:fail')],
      })
      const seen = new Set<string | undefined>()
      for (const frame of turn.frames) {
        const kinds = matchingKinds(frame)
        expect({ frame: frame.raw, kinds: kinds.length }).toEqual({ frame: frame.raw, kinds: 1 })
        seen.add(kinds[0])
      }
      for (const kind of STEP_KINDS) expect(seen).toContain(kind)
    } finally {
      await app.conversations.whenIdle()
      await app.close()
      await fake.stop()
    }
  }, 30_000)

  test('an item that strays from its kind matches none', () => {
    const strays = [
      {
        event: 'delta',
        data: { p: '', o: 'patch', v: [{ p: '/message/content/parts/0', o: 'append', v: 1 }] },
      },
      { data: { type: 'title_generation', title: '', conversation_id: crypto.randomUUID() } },
      {
        data: {
          type: 'error',
          conversation_id: crypto.randomUUID(),
          message_id: 'm',
          code: 'model_error',
          detail: 'x',
        },
      },
      { data: '[done]' },
    ]
    for (const stray of strays)
      expect(StreamEvents.filter((schema) => Value.Check(schema, stray))).toEqual([])
  })
})
