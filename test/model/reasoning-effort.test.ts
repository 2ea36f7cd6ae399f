// How hard a model should think (CONTRACT §15): chatgpt.com's thinking_effort
// ladder and OpenAI's reasoning_effort words become OpenAI's word; anything
// else is dropped, never passed on.
import { expect, test } from 'bun:test'
import { reasoningEffortOf } from '../../src/conversation/model/reasoning-effort.ts'

test("chatgpt.com's ladder maps onto OpenAI's words", () => {
  expect(reasoningEffortOf('min', undefined)).toBe('low')
  expect(reasoningEffortOf('standard', undefined)).toBe('medium')
  expect(reasoningEffortOf('extended', undefined)).toBe('high')
  expect(reasoningEffortOf('max', undefined)).toBe('high')
})

test("OpenAI's words pass as they are, in any case; reasoning_effort wins", () => {
  for (const word of ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'])
    expect(reasoningEffortOf(undefined, word)).toBe(word)
  expect(reasoningEffortOf('High', undefined)).toBe('high')
  expect(reasoningEffortOf('max', 'low')).toBe('low')
  // An unknown reasoning_effort leaves thinking_effort to decide.
  expect(reasoningEffortOf('extended', 'turbo')).toBe('high')
})

test('unknown words, prototype names and nothing at all give no effort', () => {
  for (const word of ['turbo', '', 'constructor', '__proto__', 'toString', 'hasOwnProperty'])
    expect(reasoningEffortOf(word, word)).toBeUndefined()
  expect(reasoningEffortOf(null, null)).toBeUndefined()
  expect(reasoningEffortOf(undefined, undefined)).toBeUndefined()
})
