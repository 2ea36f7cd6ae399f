// The built-in model: a deterministic, network-free reply computed from the
// context, streamed word by word. It lets the service run and be tested with no
// model server, and makes every stream reproducible.
import {
  type ContextMessage,
  ModelError,
  type ModelProvider,
  type ModelRequest,
} from './provider.ts'

/** The longest excerpt of the user's text echoed back, in words: keeps replies short. */
const ECHO_WORDS = 40

const CLOSINGS = [
  'Tell me more.',
  'What would you like to do next?',
  'I am only a local echo, but I am listening.',
  'Shall we keep going?',
  'That is worth thinking about.',
]

/** FNV-1a over the whole context, so the closing depends on everything said so far. */
function fingerprint(messages: ContextMessage[]): number {
  let hash = 0x811c9dc5
  for (const message of messages) {
    const text = `${message.role}\u0000${message.content}\u0001`
    for (let i = 0; i < text.length; i++) {
      hash ^= text.charCodeAt(i)
      hash = Math.imul(hash, 0x01000193) >>> 0
    }
  }
  return hash
}

function plural(count: number, word: string): string {
  return `${count} ${word}${count === 1 ? '' : 's'}`
}

const wordsOf = (text: string) => text.split(/\s+/).filter((word) => word !== '')

/**
 * The whole reply for a context: a pure function, exported for tests. A
 * system message (a system prompt, custom instructions) is not part of the
 * conversation; the reply only says how long it was, so its arrival shows.
 */
export function localReply(context: ContextMessage[]): string {
  const messages = context.filter((message) => message.role !== 'system')
  const system = context.filter((message) => message.role === 'system')
  const userMessages = messages.filter((message) => message.role === 'user')
  const last = userMessages.at(-1)
  const closing = CLOSINGS[fingerprint(messages) % CLOSINGS.length] ?? ''
  const instructions =
    system.length === 0
      ? ''
      : ` I am following my instructions (${plural(wordsOf(system.map((m) => m.content).join(' ')).length, 'word')}).`
  if (last === undefined) return `Hello! I am the local echo model.${instructions} ${closing}`
  // Whitespace is collapsed so the echo reads as one line and splits into clean words.
  const words = wordsOf(last.content)
  if (words.length === 0) return `You sent an empty message.${instructions} ${closing}`
  const excerpt = words.slice(0, ECHO_WORDS).join(' ') + (words.length > ECHO_WORDS ? ' …' : '')
  return (
    `You said: "${excerpt}". That is ${plural(words.length, 'word')}, ` +
    `and message ${messages.length} of our conversation ` +
    `(${plural(userMessages.length, 'message')} from you).${instructions} ${closing}`
  )
}

/**
 * Splits text into word-sized chunks (a word plus the whitespace after it), so
 * the chunks concatenated equal the text exactly. Leading whitespace joins the
 * first chunk; chunks are never empty.
 */
export function splitIntoChunks(text: string): string[] {
  const chunks = text.match(/\S+\s*/g) ?? []
  const leading = /^\s*/.exec(text)?.[0] ?? ''
  if (chunks.length === 0) return text === '' ? [] : [text]
  if (leading !== '') chunks[0] = leading + chunks[0]
  return chunks
}

/**
 * Waits between chunks of one stream, cut short when `signal` aborts (the
 * caller then checks it). One abort listener serves every pause of the stream
 * rather than one added and removed per chunk: a stream pauses once per item.
 */
function pauses(signal: AbortSignal | undefined) {
  let cutShort: (() => void) | undefined
  const onAbort = () => cutShort?.()
  signal?.addEventListener('abort', onAbort, { once: true })
  return {
    pause(ms: number): Promise<void> {
      if (signal?.aborted) return Promise.resolve()
      return new Promise((resolve) => {
        const timer = setTimeout(resolve, ms)
        cutShort = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    },
    dispose() {
      signal?.removeEventListener('abort', onAbort)
    },
  }
}

/**
 * The deterministic local model. Waits `chunkDelayMs` between chunks (no timer
 * at all when 0, so tests run at full speed). An aborted `request.signal` stops
 * the stream with a ModelError, since a cut-off reply is not a finished one.
 */
export function createLocalModel(options: { slug: string; chunkDelayMs: number }): ModelProvider {
  return {
    slug: options.slug,
    async *stream(request: ModelRequest): AsyncGenerator<string> {
      const { signal } = request
      const chunks = splitIntoChunks(localReply(request.messages))
      const waits = options.chunkDelayMs > 0 ? pauses(signal) : undefined
      try {
        for (const [index, chunk] of chunks.entries()) {
          if (index > 0 && waits) await waits.pause(options.chunkDelayMs)
          if (signal?.aborted) throw new ModelError('The reply was cancelled.')
          yield chunk
        }
      } finally {
        waits?.dispose()
      }
    },
  }
}
