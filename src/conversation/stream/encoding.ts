// Pure builders of the "delta_encoding v1" stream items (CONTRACT §4.2-§4.3,
// §9, §11-§12) and their SSE frames. Every item is encoded once, when it enters the
// turn log; subscribers only copy frames.
import type { FinishType, StreamMessage } from '../messages.ts'

export type { FinishType }

export interface StreamItem {
  event?: 'delta_encoding' | 'delta'
  /** One line: JSON text or `[DONE]`. */
  data: string
}

/** The SSE frame of one item: optional event line, one data line, blank line. */
export function frameOf(item: StreamItem): string {
  const event = item.event ? `event: ${item.event}\n` : ''
  return `${event}data: ${item.data}\n\n`
}

/** The keepalive comment; not an item. */
export const KEEPALIVE = ': ping\n\n'

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

// The append item's frame around its chunk, cut once from a frame built by
// appendItem itself, so the two cannot drift apart.
const APPEND_MARK = '\u0000'
const [appendHead = '', appendTail = ''] = frameOf(appendItem(APPEND_MARK)).split(
  JSON.stringify(APPEND_MARK),
)

/**
 * frameOf(appendItem(chunk)), byte for byte, without building and serializing
 * the item's objects: a reply streams one of these per chunk.
 */
export const appendFrame = (chunk: string): string =>
  appendHead + JSON.stringify(chunk) + appendTail

/**
 * How a reply ended: `stop` (the model finished), `interrupted` (stopped by a
 * user or a shutdown: a finished reply, CONTRACT §12) or `error` (the model
 * failed, or its runner died: a partial one, §4.3 and §13).
 */

/** The stored status of a reply that ended so. */
export const statusOf = (finish: FinishType) =>
  finish === 'error' ? 'finished_partial_completion' : 'finished_successfully'

export const completionItem = (finish: FinishType): StreamItem => {
  const ok = finish !== 'error'
  return delta({
    p: '',
    o: 'patch',
    v: [
      { p: '/message/status', o: 'replace', v: statusOf(finish) },
      { p: '/message/end_turn', o: 'replace', v: ok },
      {
        p: '/message/metadata',
        o: 'append',
        v: { is_complete: true, finish_details: { type: finish } },
      },
    ],
  })
}

/**
 * Why a stream carries an error item: the model failed; the reply could not be
 * stored; its runner died; the turn state (Redis) or the database did not
 * answer in time mid-turn (CONTRACT §19); the turn's attached files could
 * not be read (§20); or the server failed in a way that is none of these.
 */
export type StreamErrorCode =
  | 'model_error'
  | 'storage_error'
  | 'interrupted'
  | 'state_unavailable'
  | 'storage_unavailable'
  | 'server_error'
  | 'attachment_unavailable'

export const errorItem = (
  conversationId: string,
  messageId: string,
  detail: string,
  code: StreamErrorCode = 'model_error',
): StreamItem =>
  // `error` repeats the detail under the key deployed ChatGPT clients read (CONTRACT §9).
  data({
    type: 'error',
    conversation_id: conversationId,
    message_id: messageId,
    code,
    detail,
    error: detail,
  })

/** The conversation's title, streamed by its first turn (CONTRACT §11). */
export const titleGenerationItem = (title: string, conversationId: string): StreamItem =>
  data({ type: 'title_generation', title, conversation_id: conversationId })

/** Whether a log's frames hold the title item (a first turn streams it as soon as it is known). */
export const holdsTitle = (frames: readonly string[]) =>
  frames.some((frame) => frame.startsWith('data: {"type":"title_generation"'))

export const streamCompleteItem = (conversationId: string): StreamItem =>
  data({ type: 'message_stream_complete', conversation_id: conversationId })

export const doneItem = (): StreamItem => ({ data: '[DONE]' })

/** The last frame of every stream (doneItem, encoded). */
export const DONE_FRAME = 'data: [DONE]\n\n'

/**
 * The reply text carried by a turn's frames: its append items' chunks, in
 * order (the inverse of appendItem). What a new owner keeps of a dead owner's
 * reply when the log is the checkpoint.
 */
export function appendedText(frames: readonly string[]): string {
  let text = ''
  for (const frame of frames) {
    if (!frame.startsWith('event: delta\ndata: ')) continue
    const item = JSON.parse(frame.slice('event: delta\ndata: '.length)) as {
      o?: string
      v?: { p?: string; o?: string; v?: unknown }[]
    }
    const op = item.o === 'patch' && item.v?.length === 1 ? item.v[0] : undefined
    if (op?.p === '/message/content/parts/0' && op.o === 'append' && typeof op.v === 'string')
      text += op.v
  }
  return text
}

/**
 * How a finished stream's reply ended: the finish type its completion item
 * carries, or undefined when there is none. Lets the reply of a turn whose
 * final write failed be stored later exactly as it was streamed.
 */
export function finishOf(frames: readonly string[]): FinishType | undefined {
  for (let index = frames.length - 1; index >= 0; index--) {
    const frame = frames[index] as string
    if (!frame.startsWith('event: delta\ndata: ')) continue
    const item = JSON.parse(frame.slice('event: delta\ndata: '.length)) as {
      v?: { p?: string; o?: string; v?: { finish_details?: { type?: FinishType } } }[]
    }
    if (!Array.isArray(item.v)) continue
    for (const op of item.v)
      if (op.p === '/message/metadata' && op.o === 'append' && op.v?.finish_details?.type)
        return op.v.finish_details.type
  }
  return undefined
}
