// Sends that stream across a store fault, and the check CONTRACT §19 asks of
// each once the fault is over, on the instance it was sent to: the stream
// ended with its last items ([DONE] after message_stream_complete and the
// completion patch), an error item - if any - names a store, never the model,
// and the stored reply is exactly the text the stream carried
// (faults/redis-process.test.ts, support/failover-turns.ts).
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
  /** The instance it was sent to: where it is read and its reply asked for. */
  base: string
  userId: string
  /** What was sent. */
  message: string
  status: number
  /** A refusal's body, when it did not answer 200. */
  refusal?: string
  stream?: StreamReading
}

/** Starts a send of a new conversation and, when it answers 200, reads it until `appends` appends. */
export async function startSend(
  base: string,
  userId: string,
  message = STREAMING_MESSAGE,
  appends = 3,
): Promise<RunningSend> {
  const response = await send(base, userId, message)
  if (response.status !== 200)
    return { base, userId, message, status: response.status, refusal: await response.text() }
  const stream = reading(response)
  await stream.until((text) => appendedChunks(completeFrames(text).join('')).length >= appends)
  return { base, userId, message, status: 200, stream }
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

/** A send read to its end: its body, its conversation, and the reply text it carried. */
export interface AuditedSend {
  sent: RunningSend
  body: string
  conversationId: string
  streamed: string
}

/**
 * Reads each 200 send to its end, on the instance it was sent to, and checks
 * its ending and its stored reply (CONTRACT §19); resolves with what each
 * carried, for more checks.
 */
export async function auditSends(
  sends: readonly RunningSend[],
  storeCode: 'state_unavailable' | 'storage_unavailable',
): Promise<AuditedSend[]> {
  const audited: AuditedSend[] = []
  for (const sent of sends) {
    if (sent.status !== 200 || !sent.stream) continue
    const body = await sent.stream.until(() => false)
    const frames = completeFrames(body)
    // These expectations name the user, so a failure says which send it was.
    expect({ user: sent.userId, last: frames.at(-1) }).toEqual({
      user: sent.userId,
      last: 'data: [DONE]\n\n',
    })
    const items = dataItems(frames.join(''))
    expect(items.at(-1)?.type).toBe('message_stream_complete')
    for (const item of items.filter((entry) => entry.type === 'error'))
      expect([storeCode, 'interrupted']).toContain(item.code as string)
    const conversationId = items[1]?.conversation_id as string
    const streamed = appendedChunks(frames.join('')).join('')
    const stored = await storedReply(sent.base, sent.userId, conversationId)
    expect({ user: sent.userId, stored: stored.text }).toEqual({
      user: sent.userId,
      stored: streamed,
    })
    audited.push({ sent, body, conversationId, streamed })
  }
  return audited
}
