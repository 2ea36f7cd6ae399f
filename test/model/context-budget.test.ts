// Fitting a context to a model's window (CONTRACT §15), without a server: the
// cut keeps the system message and the newest messages, drops from the
// oldest, always keeps the message being answered; OpenAI models are counted
// with their real tokenizer, others with an estimate that never counts fewer
// tokens than that tokenizer on the kinds of text people send.
import { describe, expect, test } from 'bun:test'
import { fitContext } from '../../src/conversation/model/context-budget.ts'
import type { ContextMessage } from '../../src/conversation/model/provider.ts'
import {
  ESTIMATE,
  estimateTokens,
  MESSAGE_OVERHEAD_TOKENS,
  REPLY_PRIMING_TOKENS,
  type TokenCounter,
  tokenCounter,
  tokenizerFor,
} from '../../src/conversation/model/token-count.ts'

/** A counter where every text costs its number of words: easy budgets to reason about. */
const words: TokenCounter = {
  name: 'estimate',
  count: (text) => text.split(' ').filter(Boolean).length,
}
const user = (content: string): ContextMessage => ({ role: 'user', content })
const assistant = (content: string): ContextMessage => ({ role: 'assistant', content })
/** What a message of n words costs under `words`. */
const cost = (n: number) => n + MESSAGE_OVERHEAD_TOKENS

describe('fitContext', () => {
  const history = [
    user('one two three four five'),
    assistant('six seven eight nine ten'),
    user('eleven twelve thirteen fourteen fifteen'),
    assistant('a b c d e'),
    user('newest question here now please'),
  ]

  test('no window: everything, after the system message', () => {
    expect(fitContext(history, 'sys', { contextTokens: undefined, maxTokens: 10 }, words)).toEqual([
      { role: 'system', content: 'sys' },
      ...history,
    ])
    expect(
      fitContext(history, undefined, { contextTokens: undefined, maxTokens: 10 }, words),
    ).toEqual(history)
  })

  test('cuts from the oldest until the rest fits the window minus the reply', () => {
    // Room for exactly three messages of 5 words beside the reply and the priming.
    const contextTokens = 3 * cost(5) + REPLY_PRIMING_TOKENS + 50
    const fitted = fitContext(history, undefined, { contextTokens, maxTokens: 50 }, words)
    expect(fitted).toEqual(history.slice(2))
    // One token less and only two fit.
    const tighter = fitContext(
      history,
      undefined,
      { contextTokens: contextTokens - 1, maxTokens: 50 },
      words,
    )
    expect(tighter).toEqual(history.slice(3))
  })

  test('the system message counts against the window and is always first', () => {
    const contextTokens = 3 * cost(5) + REPLY_PRIMING_TOKENS + 50
    const fitted = fitContext(history, 'be brief', { contextTokens, maxTokens: 50 }, words)
    // The 2-word system message takes the room of one 5-word message.
    expect(fitted).toEqual([{ role: 'system', content: 'be brief' }, ...history.slice(3)])
  })

  test('the message being answered is kept even when it alone overflows', () => {
    const huge = user(Array.from({ length: 500 }, (_, i) => `w${i}`).join(' '))
    expect(
      fitContext([...history, huge], 'sys', { contextTokens: 100, maxTokens: 50 }, words),
    ).toEqual([{ role: 'system', content: 'sys' }, huge])
  })

  test('counting stops at the first message that does not fit', () => {
    let counted = 0
    const counting: TokenCounter = {
      name: 'estimate',
      count: (text) => {
        counted++
        return words.count(text)
      },
    }
    const long = Array.from({ length: 200 }, (_, i) => user(`message ${i} with some words`))
    fitContext(long, undefined, { contextTokens: 100, maxTokens: 10 }, counting)
    expect(counted).toBeLessThan(20)
  })
})

describe('tokenizers', () => {
  test('OpenAI models served by the openai provider get their encoding; others the estimate', () => {
    expect(tokenizerFor('openai', 'gpt-4o-mini')).toBe('o200k_base')
    expect(tokenizerFor('openai', 'gpt-5')).toBe('o200k_base')
    expect(tokenizerFor('openai', 'o3-mini')).toBe('o200k_base')
    expect(tokenizerFor('openai', 'gpt-4')).toBe('cl100k_base')
    expect(tokenizerFor('openai', 'openai/gpt-3.5-turbo')).toBe('cl100k_base')
    expect(tokenizerFor('openai', 'gpt-oss-20b')).toBe('o200k_harmony')
    expect(tokenizerFor('openai', 'llama3.1:8b')).toBe('estimate')
    expect(tokenizerFor('openai', 'mistral-large')).toBe('estimate')
    expect(tokenizerFor('local', 'gpt-4o')).toBe('estimate')
  })

  test('the real tokenizer counts like tiktoken, and a special-token marker is plain text', async () => {
    const o200k = await tokenCounter('o200k_base')
    expect(o200k.count('Hello, world!')).toBe(4)
    expect(o200k.count('Say <|endoftext|> to me')).toBeGreaterThan(4)
    expect(await tokenCounter('o200k_base')).toBe(o200k)
    expect(await tokenCounter('estimate')).toBe(ESTIMATE)
  })

  test('the estimate never counts fewer tokens than the OpenAI tokenizers', async () => {
    const samples = [
      'The quick brown fox jumps over the lazy dog. '.repeat(40),
      'function add(a, b) {\n  return a + b * 2; // sum\n}\nconst xs = [1, 2, 3].map(add);\n'.repeat(
        20,
      ),
      '你好世界，这是一个测试。我们正在测量令牌。'.repeat(30),
      'Привет, как дела? Всё хорошо, спасибо! '.repeat(30),
      '0123456789abcdef'.repeat(60),
      'emoji 🌍🎉👩‍👩‍👧 and accents: naïve café façade '.repeat(30),
      'https://example.com/path?query=value&other=1#frag '.repeat(30),
    ]
    for (const name of ['o200k_base', 'cl100k_base'] as const) {
      const real = await tokenCounter(name)
      for (const text of samples)
        expect(estimateTokens(text)).toBeGreaterThanOrEqual(real.count(text))
    }
  })
})
