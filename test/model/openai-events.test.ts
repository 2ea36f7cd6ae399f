import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createLocalModel } from '../../src/conversation/model/local.ts'
import { modelEvents } from '../../src/conversation/model/model-events.ts'
import { createOpenAiModel } from '../../src/conversation/model/openai.ts'
import type { ModelEvent, ModelRequest, ToolSpec } from '../../src/conversation/model/provider.ts'
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.ts'

// The OpenAI adapter's typed events against the fake OpenAI-compatible server
// process, scripted to stream reasoning and tool calls split across chunks.

let fake: FakeOpenAi
beforeAll(async () => {
  fake = await startFakeOpenAi('slow', { chunkDelayMs: 0 })
})
afterAll(async () => {
  await fake.stop()
})

const model = (name: string) =>
  createOpenAiModel({ slug: name, baseUrl: fake.baseUrl, timeoutMs: 10_000 })

const TOOLS: ToolSpec[] = [
  {
    name: 'document_search',
    description: 'Searches documents.',
    parameters: { type: 'object', properties: { query: { type: 'string' } } },
  },
  { name: 'weather', description: 'The weather.', parameters: { type: 'object' } },
]

async function collect(events: AsyncIterable<ModelEvent>): Promise<ModelEvent[]> {
  const all: ModelEvent[] = []
  for await (const event of events) all.push(event)
  return all
}

const textOf = (events: ModelEvent[], type: 'text' | 'reasoning') =>
  events.flatMap((event) => (event.type === type ? [event.text] : [])).join('')

describe('OpenAI-compatible events', () => {
  test('reasoning_content deltas stream as reasoning, before the text, never mixed into it', async () => {
    const request: ModelRequest = { messages: [{ role: 'user', content: 'Why is the sky blue' }] }
    const events = await collect(modelEvents(model('reason-1'), request))
    expect(textOf(events, 'reasoning')).toBe('Thinking about it.')
    expect(textOf(events, 'text')).toBe('Reply of reason-1 to "Why is the sky blue" (1 messages).')
    const lastReasoning = events.findLastIndex((event) => event.type === 'reasoning')
    const firstText = events.findIndex((event) => event.type === 'text')
    expect(lastReasoning).toBeLessThan(firstText)
    // The text-only port never carries reasoning.
    const chunks: string[] = []
    for await (const chunk of model('reason-1').stream(request)) chunks.push(chunk)
    expect(chunks.join('')).toBe(textOf(events, 'text'))
  })

  test('Ollama and OpenRouter send `reasoning`: read the same way', async () => {
    const events = await collect(
      modelEvents(model('reason-ollama'), { messages: [{ role: 'user', content: 'Hi' }] }),
    )
    expect(textOf(events, 'reasoning')).toBe('Thinking about it.')
    expect(textOf(events, 'text')).toStartWith('Reply of reason-ollama')
  })

  test('parallel tool calls split across interleaved chunks come out whole, after the round', async () => {
    const events = await collect(
      modelEvents(model('tools-1'), {
        messages: [{ role: 'user', content: 'find redis' }],
        tools: TOOLS,
      }),
    )
    expect(events).toEqual([
      {
        type: 'tool_call',
        call: {
          id: 'call_0',
          name: 'document_search',
          arguments: '{"query":"find redis","text":"find redis"}',
        },
      },
      {
        type: 'tool_call',
        call: {
          id: 'call_1',
          name: 'weather',
          arguments: '{"query":"find redis","text":"find redis"}',
        },
      },
    ])
    const sent = (await fake.requests()).at(-1)?.body
    expect(sent?.tools).toEqual(
      TOOLS.map((tool) => ({
        type: 'function',
        function: { name: tool.name, description: tool.description, parameters: tool.parameters },
      })),
    )
  })

  test('tool results go back as assistant tool_calls and tool messages; the model answers from them', async () => {
    const call = { id: 'call_0', name: 'document_search', arguments: '{"query":"find redis"}' }
    const events = await collect(
      modelEvents(model('reason-tools-2'), {
        messages: [
          { role: 'user', content: 'find redis' },
          { role: 'assistant', content: '', toolCalls: [call] },
          { role: 'tool', content: 'Redis keeps data in memory.', toolCallId: 'call_0' },
        ],
        tools: TOOLS,
      }),
    )
    expect(textOf(events, 'reasoning')).toBe('Thinking about it.')
    expect(textOf(events, 'text')).toBe('Tool results: Redis keeps data in memory.')
    expect(events.some((event) => event.type === 'tool_call')).toBe(false)
    const sent = (await fake.requests()).at(-1)?.body
    expect(sent?.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_0',
            type: 'function',
            function: { name: call.name, arguments: call.arguments },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_0', content: 'Redis keeps data in memory.' },
    ])
  })

  test('invalid JSON arguments are passed on as written (the tool side answers them)', async () => {
    const events = await collect(
      modelEvents(model('tools-badjson'), {
        messages: [{ role: 'user', content: 'x' }],
        tools: TOOLS.slice(0, 1),
      }),
    )
    expect(events).toEqual([
      {
        type: 'tool_call',
        call: { id: 'call_0', name: 'document_search', arguments: '{"query": oops' },
      },
    ])
  })

  test('no tools offered: no `tools` in the request, and a tools model just answers', async () => {
    const events = await collect(
      modelEvents(model('tools-3'), { messages: [{ role: 'user', content: 'hello' }] }),
    )
    expect(textOf(events, 'text')).toStartWith('Reply of tools-3')
    expect((await fake.requests()).at(-1)?.body.tools).toBeUndefined()
  })

  test('the local model yields its text as text events only', async () => {
    const local = createLocalModel({ slug: 'local-echo', chunkDelayMs: 0 })
    const events = await collect(
      modelEvents(local, { messages: [{ role: 'user', content: 'hi' }], tools: TOOLS }),
    )
    expect(events.length).toBeGreaterThan(0)
    expect(events.every((event) => event.type === 'text')).toBe(true)
  })
})
