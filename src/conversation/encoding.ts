// Pure builders of the "delta_encoding v1" stream items (CONTRACT §4.2-§4.3)
// and their SSE bytes. Every item is encoded once, when it enters the turn
// log; subscribers only copy bytes.
import type { StreamMessage } from './messages.ts'

export interface StreamItem {
  event?: 'delta_encoding' | 'delta'
  /** One line: JSON text or `[DONE]`. */
  data: string
}

const encoder = new TextEncoder()

/** The SSE frame of one item: optional event line, one data line, blank line. */
export function encodeItem(item: StreamItem): Uint8Array {
  const event = item.event ? `event: ${item.event}\n` : ''
  return encoder.encode(`${event}data: ${item.data}\n\n`)
}

/** The keepalive comment; not an item. */
export const KEEPALIVE = encoder.encode(': ping\n\n')

const delta = (value: unknown): StreamItem => ({ event: 'delta', data: JSON.stringify(value) })
const data = (value: unknown): StreamItem => ({ data: JSON.stringify(value) })

export const deltaEncodingItem = (): StreamItem => ({ event: 'delta_encoding', data: '"v1"' })

export const resumeTokenItem = (token: string, conversationId: string): StreamItem =>
  data({ type: 'resume_conversation_token', token, conversation_id: conversationId })

export const inputMessageItem = (message: StreamMessage, conversationId: string): StreamItem =>
  data({ type: 'input_message', input_message: message, conversation_id: conversationId })

export const assistantAddItem = (message: StreamMessage, conversationId: string): StreamItem =>
  delta({ p: '', o: 'add', v: { message, conversation_id: conversationId }, c: 0 })

export const firstTokenMarkerItem = (conversationId: string, messageId: string): StreamItem =>
  data({
    type: 'message_marker',
    conversation_id: conversationId,
    message_id: messageId,
    marker: 'user_visible_token',
    event: 'first',
  })

export const appendItem = (chunk: string): StreamItem =>
  delta({ p: '', o: 'patch', v: [{ p: '/message/content/parts/0', o: 'append', v: chunk }] })

export type Completion = 'finished_successfully' | 'finished_partial_completion'

export const completionItem = (status: Completion): StreamItem => {
  const ok = status === 'finished_successfully'
  return delta({
    p: '',
    o: 'patch',
    v: [
      { p: '/message/status', o: 'replace', v: status },
      { p: '/message/end_turn', o: 'replace', v: ok },
      {
        p: '/message/metadata',
        o: 'append',
        v: { is_complete: true, finish_details: { type: ok ? 'stop' : 'error' } },
      },
    ],
  })
}

export const errorItem = (
  conversationId: string,
  messageId: string,
  detail: string,
  code: 'model_error' | 'storage_error' = 'model_error',
): StreamItem =>
  data({ type: 'error', conversation_id: conversationId, message_id: messageId, code, detail })

export const streamCompleteItem = (conversationId: string): StreamItem =>
  data({ type: 'message_stream_complete', conversation_id: conversationId })

export const doneItem = (): StreamItem => ({ data: '[DONE]' })
