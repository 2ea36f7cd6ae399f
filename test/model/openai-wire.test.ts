import { describe, expect, test } from 'bun:test'
import {
  readChunk,
  safeText,
  statusErrorDetail,
  upstreamErrorMessage,
} from '../../src/conversation/model/openai-wire.ts'
import { ModelError } from '../../src/conversation/model/provider.ts'

const KEY = 'sk-secret-key'

describe('openai wire helpers', () => {
  test('readChunk: content, finish_reason, and chunks that carry nothing', () => {
    const chunk = (choice: unknown) => JSON.stringify({ choices: [choice] })
    expect(readChunk(chunk({ delta: { content: 'Hi' }, finish_reason: null }), KEY)).toEqual({
      content: 'Hi',
      finished: false,
    })
    expect(readChunk(chunk({ delta: { role: 'assistant', content: '' } }), KEY)).toEqual({
      content: undefined,
      finished: false,
    })
    expect(readChunk(chunk({ delta: {}, finish_reason: 'stop' }), KEY)).toEqual({
      content: undefined,
      finished: true,
    })
    expect(readChunk(JSON.stringify({ choices: [], usage: { total_tokens: 3 } }), KEY)).toEqual({
      content: undefined,
      finished: false,
    })
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
