// Counting a context's tokens, so it can be cut to fit a model's window
// (CONTRACT §15). OpenAI models are counted with their real tokenizer
// (gpt-tokenizer: pure JS, the encodings of tiktoken), loaded on first use:
// an encoding's tables take about half a second and a hundred MB to load,
// which a deployment of local models never pays. Any other model is counted
// with a conservative estimate that errs towards too many tokens, so a cut
// context fits whatever tokenizer the model really has.
import { modelToEncodingMap } from 'gpt-tokenizer/mapping'

/** An encoding of gpt-tokenizer this service loads, or `estimate`. */
export type TokenizerName =
  | 'o200k_base'
  | 'o200k_harmony'
  | 'cl100k_base'
  | 'p50k_base'
  | 'r50k_base'
  | 'estimate'

export interface TokenCounter {
  readonly name: TokenizerName
  /** Tokens of one text. */
  count(text: string): number
}

/**
 * Tokens a chat message costs besides its text (role and separators), and
 * what priming the reply costs: OpenAI's published rule is 3 and 3; one more
 * per message covers the chat templates of other servers.
 */
export const MESSAGE_OVERHEAD_TOKENS = 4
export const REPLY_PRIMING_TOKENS = 3

/** Model names of OpenAI's families (optionally behind a router's `openai/` prefix). */
const OPENAI_MODEL = /^(?:openai\/)?(gpt-|chatgpt-|o\d|text-davinci|davinci|babbage|codex)/i

/**
 * The tokenizer of a model: its OpenAI encoding when the `openai` provider
 * serves an OpenAI model (gpt-tokenizer's map, `o200k_base` for the models
 * newer than it lists), else the estimate.
 */
export function tokenizerFor(provider: 'local' | 'openai', model: string): TokenizerName {
  if (provider !== 'openai' || !OPENAI_MODEL.test(model)) return 'estimate'
  const name = model.replace(/^openai\//i, '').toLowerCase()
  const encoding = (modelToEncodingMap as Record<string, string | undefined>)[name] ?? 'o200k_base'
  return encoding in LOADERS ? (encoding as TokenizerName) : 'o200k_base'
}

type Encoding = {
  countTokens(text: string, options?: { disallowedSpecial?: Set<string> }): number
}

const LOADERS: Record<Exclude<TokenizerName, 'estimate'>, () => Promise<Encoding>> = {
  o200k_base: () => import('gpt-tokenizer/encoding/o200k_base'),
  o200k_harmony: () => import('gpt-tokenizer/encoding/o200k_harmony'),
  cl100k_base: () => import('gpt-tokenizer/encoding/cl100k_base'),
  p50k_base: () => import('gpt-tokenizer/encoding/p50k_base'),
  r50k_base: () => import('gpt-tokenizer/encoding/r50k_base'),
}

const isLetter = (code: number) => (code >= 65 && code <= 90) || (code >= 97 && code <= 122)

/**
 * An upper estimate for tokenizers unknown here. Measured tokenizers spend
 * about one token per 4 letters of English, one per digit at worst (Llama's
 * split digits), one per punctuation mark at worst, and up to two per other
 * character (CJK, accents, emoji with byte fallback), and small vocabularies
 * split code finer: this counts a token per 2.5 letters, one per digit,
 * punctuation mark or line break, and two per other character. Spaces and
 * tabs join the word after them.
 */
export function estimateTokens(text: string): number {
  let letters = 0
  let tokens = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 128) {
      if (isLetter(code)) letters++
      else if (code === 32 || code === 9) continue
      else tokens++ // digits, punctuation, line breaks, control characters
      continue
    }
    // A surrogate pair is one character: count it at its first half.
    if (code >= 0xdc00 && code <= 0xdfff) continue
    tokens += 2
  }
  return tokens + Math.ceil(letters / 2.5)
}

export const ESTIMATE: TokenCounter = { name: 'estimate', count: estimateTokens }

/** Special-token markers in a user's text are text: counted, never refused. */
const PLAIN = { disallowedSpecial: new Set<string>() }

const loaded = new Map<TokenizerName, Promise<TokenCounter>>()

/** The counter of a tokenizer, its encoding loaded once per process on first use. */
export function tokenCounter(name: TokenizerName): Promise<TokenCounter> {
  if (name === 'estimate') return Promise.resolve(ESTIMATE)
  let counter = loaded.get(name)
  if (!counter) {
    counter = LOADERS[name]().then((encoding) => ({
      name,
      // Text with special-token markers (`<|endoftext|>`) is counted as plain text.
      count: (text: string) => encoding.countTokens(text, PLAIN),
    }))
    // A failed load is retried by the next turn rather than remembered.
    counter.catch(() => loaded.delete(name))
    loaded.set(name, counter)
  }
  return counter
}
