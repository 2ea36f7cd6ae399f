import { describe, expect, test } from 'bun:test'
import {
  readChunk,
  safeText,
  statusErrorDetail,
  upstreamErrorMessage,
  wireConversation,
} from '../../src/conversation/model/openai-wire.ts'
import { ModelError } from '../../src/conversation/model/provider.ts'

const KEY = 'sk-secret-key'

describe('openai wire helpers', () => {
  test('readChunk: content, finish_reason, and chunks that carry nothing', () => {
    const chunk = (choice: unknown) => JSON.stringify({ choices: [choice] })
    const none = { content: undefined, reasoning: undefined, toolCalls: [], finished: false }
    expect(readChunk(chunk({ delta: { content: 'Hi' }, finish_reason: null }), KEY)).toEqual({
      ...none,
      content: 'Hi',
    })
    expect(readChunk(chunk({ delta: { role: 'assistant', content: '' } }), KEY)).toEqual(none)
    expect(readChunk(chunk({ delta: {}, finish_reason: 'stop' }), KEY)).toEqual({
      ...none,
      finished: true,
    })
    expect(readChunk(JSON.stringify({ choices: [], usage: { total_tokens: 3 } }), KEY)).toEqual(
      none,
    )
  })

  test('readChunk: reasoning as reasoning_content (vLLM, DeepSeek) or reasoning (Ollama, OpenRouter)', () => {
    const chunk = (delta: unknown) => JSON.stringify({ choices: [{ delta }] })
    expect(readChunk(chunk({ reasoning_content: 'Hmm', content: null }), KEY).reasoning).toBe('Hmm')
    expect(readChunk(chunk({ reasoning: 'Let me see' }), KEY).reasoning).toBe('Let me see')
    expect(readChunk(chunk({ reasoning_content: 'a', reasoning: 'a' }), KEY).reasoning).toBe('a')
    expect(readChunk(chunk({ reasoning: '', content: 'x' }), KEY)).toMatchObject({
      reasoning: undefined,
      content: 'x',
    })
    expect(readChunk(chunk({ reasoning: 42 }), KEY).reasoning).toBeUndefined()
  })

  test('readChunk: tool call pieces; malformed entries are dropped, object arguments kept as JSON', () => {
    const chunk = (tool_calls: unknown) => JSON.stringify({ choices: [{ delta: { tool_calls } }] })
    expect(
      readChunk(
        chunk([
          { index: 0, id: 'call_a', type: 'function', function: { name: 'f', arguments: '{"a"' } },
          { index: 1, function: { arguments: ':1}' } },
          'junk',
          { index: -1, function: { arguments: { q: 'x' } } },
        ]),
        KEY,
      ).toolCalls,
    ).toEqual([
      { index: 0, id: 'call_a', name: 'f', arguments: '{"a"' },
      { index: 1, id: undefined, name: undefined, arguments: ':1}' },
      { index: undefined, id: undefined, name: undefined, arguments: '{"q":"x"}' },
    ])
    expect(readChunk(chunk('not an array'), KEY).toolCalls).toEqual([])
  })

  test('wireConversation: tool calls, tool results and tools in the chat-completions shape', () => {
    const body = wireConversation({
      messages: [
        { role: 'user', content: 'Search' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'call_1', name: 'document_search', arguments: '{"query":"x"}' }],
        },
        { role: 'tool', content: 'found', toolCallId: 'call_1' },
      ],
      tools: [{ name: 'document_search', description: 'd', parameters: { type: 'object' } }],
    })
    expect(body).toEqual({
      messages: [
        { role: 'user', content: 'Search' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            {
              id: 'call_1',
              type: 'function',
              function: { name: 'document_search', arguments: '{"query":"x"}' },
            },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'found' },
      ],
      tools: [
        {
          type: 'function',
          function: { name: 'document_search', description: 'd', parameters: { type: 'object' } },
        },
      ],
    })
    expect(wireConversation({ messages: [], tools: [] })).toEqual({ messages: [] })
  })

  test('readChunk: malformed data and error bodies throw ModelError', () => {
    expect(() => readChunk('{nope', KEY)).toThrow(ModelError)
    expect(() => readChunk('[1,2]', KEY)).toThrow('could not be read')
    expect(() => readChunk(JSON.stringify({ error: { message: `bad ${KEY}` } }), KEY)).toThrow(
      'The model server reported an error during the reply: bad ***',
    )
    expect(() => readChunk(JSON.stringify({ error: 'overloaded' }), KEY)).toThrow('overloaded')
  })

  test('upstreamErrorMessage reads both error shapes', () => {
    expect(upstreamErrorMessage({ error: { message: 'm' } })).toBe('m')
    expect(upstreamErrorMessage({ error: 's' })).toBe('s')
    expect(upstreamErrorMessage({ error: {} })).toBeUndefined()
    expect(upstreamErrorMessage('text')).toBeUndefined()
  })

  test('statusErrorDetail', () => {
    expect(statusErrorDetail(429, JSON.stringify({ error: { message: 'Slow down.' } }), KEY)).toBe(
      'The model server answered with status 429: Slow down.',
    )
    expect(statusErrorDetail(503, 'Service Unavailable', KEY)).toBe(
      'The model server answered with status 503.',
    )
  })

  test('safeText masks the key, flattens whitespace and cuts at 200 characters', () => {
    expect(safeText(`key ${KEY}\n\nend`, KEY)).toBe('key *** end')
    expect(safeText('é'.repeat(300), undefined)).toBe(`${'é'.repeat(200)}…`)
  })
})
