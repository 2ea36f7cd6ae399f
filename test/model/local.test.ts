import { describe, expect, test } from 'bun:test'
import {
  createLocalModel,
  localReply,
  splitIntoChunks,
} from '../../src/conversation/model/local.ts'
import { type ContextMessage, ModelError } from '../../src/conversation/model/provider.ts'

async function collect(stream: AsyncIterable<string>): Promise<string[]> {
  const chunks: string[] = []
  for await (const chunk of stream) chunks.push(chunk)
  return chunks
}

const model = createLocalModel({ slug: 'local-echo', chunkDelayMs: 0 })
const context: ContextMessage[] = [
  { role: 'user', content: 'Hello there' },
  { role: 'assistant', content: 'Hi!' },
  { role: 'user', content: 'How are you\ntoday?' },
]

describe('splitIntoChunks', () => {
  test('each chunk is a word with the whitespace after it', () => {
    expect(splitIntoChunks('one two  three\n')).toEqual(['one ', 'two  ', 'three\n'])
  })

  test('leading whitespace joins the first chunk', () => {
    expect(splitIntoChunks('  a b')).toEqual(['  a ', 'b'])
  })

  test('empty and blank text', () => {
    expect(splitIntoChunks('')).toEqual([])
    expect(splitIntoChunks('   ')).toEqual(['   '])
  })
})

describe('localReply', () => {
  test('echoes the last user message', () => {
    const reply = localReply(context)
    expect(reply).toContain('You said: "How are you today?"')
    expect(reply).toContain('message 3 of our conversation')
  })

  test('depends on the context', () => {
    const other = localReply([...context, { role: 'user', content: 'Something else' }])
    expect(other).not.toBe(localReply(context))
    const earlier = localReply([{ role: 'user', content: 'How are you\ntoday?' }])
    expect(earlier).not.toBe(localReply(context))
  })

  test('long messages are cut to a short excerpt', () => {
    const reply = localReply([{ role: 'user', content: 'word '.repeat(1000) }])
    expect(reply).toContain('…')
    expect(reply).toContain('1000 words')
    expect(reply.length).toBeLessThan(500)
  })
})

describe('createLocalModel', () => {
  test('reports its slug', () => {
    expect(model.slug).toBe('local-echo')
  })

  test('is deterministic', async () => {
    const first = await collect(model.stream({ messages: context }))
    const second = await collect(model.stream({ messages: structuredClone(context) }))
    expect(second).toEqual(first)
  })

  test('chunks concatenate to the reply and are never empty', async () => {
    const chunks = await collect(model.stream({ messages: context }))
    expect(chunks.join('')).toBe(localReply(context))
    for (const chunk of chunks) expect(chunk.length).toBeGreaterThan(0)
  })

  test.each([
    ['an empty context', []],
    ['a one-word message', [{ role: 'user', content: 'hi' }]],
    ['an empty message', [{ role: 'user', content: '' }]],
    ['only assistant messages', [{ role: 'assistant', content: 'hello' }]],
  ] as [string, ContextMessage[]][])('at least two chunks for %s', async (_, messages) => {
    const chunks = await collect(model.stream({ messages }))
    expect(chunks.length).toBeGreaterThanOrEqual(2)
    expect(chunks.join('')).toBe(localReply(messages))
  })

  test('waits between chunks when a delay is set', async () => {
    const slow = createLocalModel({ slug: 'local-echo', chunkDelayMs: 5 })
    const started = performance.now()
    const chunks = await collect(slow.stream({ messages: [{ role: 'user', content: 'hi' }] }))
    expect(performance.now() - started).toBeGreaterThanOrEqual((chunks.length - 1) * 4)
  })

  test('an aborted signal stops the stream', async () => {
    const controller = new AbortController()
    const received: string[] = []
    let caught: unknown
    try {
      for await (const chunk of model.stream({ messages: context, signal: controller.signal })) {
        received.push(chunk)
        if (received.length === 2) controller.abort()
      }
    } catch (error) {
      caught = error
    }
    expect(received).toHaveLength(2)
    expect(caught).toBeInstanceOf(ModelError)
  })

  test('an abort during a delay ends the wait at once', async () => {
    const slow = createLocalModel({ slug: 'local-echo', chunkDelayMs: 10_000 })
    const controller = new AbortController()
    const iterator = slow
      .stream({ messages: context, signal: controller.signal })
      [Symbol.asyncIterator]()
    expect((await iterator.next()).done).toBe(false)
    const started = performance.now()
    setTimeout(() => controller.abort(), 10)
    await expect(iterator.next()).rejects.toBeInstanceOf(ModelError)
    expect(performance.now() - started).toBeLessThan(1000)
  })

  test('a signal aborted before the start yields nothing', async () => {
    const signal = AbortSignal.abort()
    await expect(collect(model.stream({ messages: context, signal }))).rejects.toBeInstanceOf(
      ModelError,
    )
  })
})
