// Sends that stream across a store fault, and the check CONTRACT §19 asks of
// each once the fault is over: the stream ended with its last items ([DONE]
// after message_stream_complete and the completion patch), an error item - if
// any - names a store, never the model, and the stored reply is exactly the
// text the stream carried.
import { expect } from 'bun:test'
import {
  appendedChunks,
  dataItems,
  reading,
  type StreamReading,
  send,
  sleep,
} from './server-process.ts'
import { completeFrames } from './sse-frames.ts'

/** A message whose local-model reply streams well over a hundred chunks. */
export const STREAMING_MESSAGE = Array.from({ length: 80 }, (_, i) => `word${i}`).join(' ')

export interface RunningSend {
  userId: string
  status: number
  stream?: StreamReading
}

/** Starts `count` sends of new conversations and reads each until its first appends. */
export async function startSends(base: string, count: number, tag: string) {
  const sends: RunningSend[] = await Promise.all(
    Array.from({ length: count }, async (_, index) => {
      const userId = `${tag}-${index}-${crypto.randomUUID().slice(0, 8)}`
      const response = await send(base, userId, STREAMING_MESSAGE)
      if (response.status !== 200) return { userId, status: response.status }
      const stream = reading(response)
      await stream.until((text) => appendedChunks(completeFrames(text).join('')).length >= 3)
      return { userId, status: 200, stream }
    }),
  )
  return sends
}

/** The reply stored for a conversation's first turn: text and status; polled until it is no longer in progress. */
export async function storedReply(
  base: string,
  userId: string,
  conversationId: string,
  withinMs = 60_000,
): Promise<{ text: string; status: string }> {
  const until = Date.now() + withinMs
  for (;;) {
    const response = await fetch(`${base}/backend-api/conversation/${conversationId}`, {
      headers: { 'x-user-id': userId },
    }).catch(() => undefined)
    if (response?.status === 200) {
      const detail = (await response.json()) as {
        current_node: string
        mapping: Record<
          string,
          { message: { content: { parts?: string[] }; status: string } | null }
        >
      }
      const reply = detail.mapping[detail.current_node]?.message
      if (reply && reply.status !== 'in_progress')
        return { text: (reply.content.parts ?? []).join(''), status: reply.status }
    }
    if (Date.now() > until) throw new Error(`the reply of ${conversationId} is still not stored`)
    await sleep(200)
  }
}

/** Reads each 200 send to its end and checks its ending and its stored reply (CONTRACT §19). */
export async function auditSends(
  base: string,
  sends: readonly RunningSend[],
  storeCode: 'state_unavailable' | 'storage_unavailable',
) {
  for (const sent of sends) {
    if (sent.status !== 200 || !sent.stream) continue
    const body = await sent.stream.until(() => false)
    const frames = completeFrames(body)
    expect(frames.at(-1)).toBe('data: [DONE]\n\n')
    const items = dataItems(frames.join(''))
    expect(items.at(-1)?.type).toBe('message_stream_complete')
    for (const item of items.filter((entry) => entry.type === 'error'))
      expect([storeCode, 'interrupted']).toContain(item.code as string)
    const conversationId = items[1]?.conversation_id as string
    const streamed = appendedChunks(frames.join('')).join('')
    const stored = await storedReply(base, sent.userId, conversationId)
    expect(stored.text).toBe(streamed)
  }
}
