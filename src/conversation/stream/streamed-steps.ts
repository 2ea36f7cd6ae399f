// The steps of a turn read back from its frames (the inverse of
// reply-items.ts): what a new owner stores of a dead runner's thoughts, tool
// calls and results, exactly as they were streamed (CONTRACT §13, §21), and
// the frame that makes the reply the streamed message again before the
// ending. A call the log shows is never run again: the new owner only ends
// the turn.
import { type AssistantStart, assistantStartMessage, turnStepTime } from '../messages.ts'
import { frameOf } from './encoding.ts'
import type { StepRecord } from './reply-items.ts'
import { messageAddItem, THOUGHTS_PATH } from './step-items.ts'

const DELTA = 'event: delta\ndata: '

interface AddedMessage {
  id: string
  author: { role: string; name: string | null }
  create_time: number
  content: Record<string, unknown> & { content_type: string }
  status: string
  end_turn: boolean | null
  metadata: Record<string, unknown>
  recipient: string
  channel: string | null
}

export interface StreamedSteps {
  records: StepRecord[]
  /** The reply as last added: its parent and create time. */
  reply: AssistantStart
  /** Frames making the reply the streamed message again; none when it already is. */
  leadFrames: string[]
}

/** The steps `frames` streamed for `reply` (as the prefix added it) of `conversationId`. */
export function streamedSteps(
  frames: readonly string[],
  reply: AssistantStart,
  conversationId: string,
): StreamedSteps {
  const records: StepRecord[] = []
  let current: StepRecord | undefined
  let lastC = 0
  let replyNow = reply
  let replyIsCurrent = true
  for (const frame of frames) {
    if (!frame.startsWith(DELTA)) continue
    const item = JSON.parse(frame.slice(DELTA.length)) as {
      p?: string
      o?: string
      v?: unknown
      c?: number
    }
    if (item.o === 'add' && item.p === '' && typeof item.c === 'number') {
      lastC = item.c
      const message = (item.v as { message: AddedMessage }).message
      if (message.id === reply.id) {
        replyIsCurrent = true
        current = undefined
        replyNow = {
          ...reply,
          createTime: message.create_time,
          parentId: String(message.metadata.parent_id),
        }
        continue
      }
      replyIsCurrent = false
      current = {
        id: message.id,
        role: message.author.role === 'tool' ? 'tool' : 'assistant',
        authorName: message.author.name,
        content: structuredClone(message.content),
        status: message.status === 'in_progress' ? 'in_progress' : 'finished_successfully',
        endTurn: message.end_turn,
        recipient: message.recipient,
        channel: message.channel,
        metadata: message.metadata,
        createTime: message.create_time,
        parentId: String(message.metadata.parent_id),
      }
      records.push(current)
      continue
    }
    if (current && item.p === THOUGHTS_PATH && item.o === 'append') {
      const [thought] = current.content.thoughts as { content: string }[]
      if (thought) thought.content += String(item.v)
      continue
    }
    // A step's completion patch closes it (a thought's `finished` with it).
    if (current && item.o === 'patch' && current.status === 'in_progress') {
      current.status = 'finished_successfully'
      current.endTurn = false
      for (const thought of (current.content.thoughts ?? []) as { finished: boolean }[])
        thought.finished = true
    }
  }
  const last = records.at(-1)
  if (replyIsCurrent || !last) return { records, reply: replyNow, leadFrames: [] }
  // Added again as reply-items.ts does: after the last step, as its child.
  replyNow = { ...reply, parentId: last.id, createTime: turnStepTime(last.createTime, 1) }
  const add = messageAddItem(assistantStartMessage(replyNow), conversationId, lastC + 1)
  return { records, reply: replyNow, leadFrames: [frameOf(add)] }
}
