// The first items of a turn's stream (CONTRACT §4.2): delta_encoding, the
// resume token, one input_message per user message (none for a regenerated
// reply, §10), and the assistant message's add. Written when the send is
// accepted, so a queued send already has its token; rebuilt, byte for byte,
// by a runner that finds the log gone (in-process logs after a restart) or
// writes it back after a store lost it (a flush, a failover).

import {
  type AssistantStart,
  assistantStartMessage,
  type MessageType,
  type StoredMessage,
  type Turn,
  userStreamMessage,
} from '../messages.ts'
import {
  assistantAddItem,
  deltaEncodingItem,
  frameOf,
  inputMessageItem,
  resumeTokenItem,
} from '../stream/encoding.ts'
import type { TurnDeps } from './deps.ts'

export interface TurnPrefix {
  conversationId: string
  /** The reply's id and Unix create time. */
  messageId: string
  createTime: number
  modelSlug: string
  /** The user message the reply answers. */
  parentId: string
  messageType: MessageType
  /** The user messages the turn stored, in order (none for a variant). */
  inputs: readonly StoredMessage[]
  token: string
}

export function prefixFrames(turn: TurnPrefix): string[] {
  return [
    deltaEncodingItem(),
    resumeTokenItem(turn.token, turn.conversationId),
    ...turn.inputs.map((message) =>
      inputMessageItem(userStreamMessage(message), turn.conversationId),
    ),
    assistantAddItem(
      assistantStartMessage({
        id: turn.messageId,
        createTime: turn.createTime,
        modelSlug: turn.modelSlug,
        parentId: turn.parentId,
        messageType: turn.messageType,
      }),
      turn.conversationId,
    ),
  ].map(frameOf)
}

/**
 * A turn's first frames, with the resume token they carry signed for
 * `userId` as of the turn's creation: built again (a log written back after a
 * store lost it, reply-log.ts; a log reopened, lifecycle.ts), they are the same
 * bytes its readers were sent when the send was accepted.
 */
export function signedPrefix(
  deps: Pick<TurnDeps, 'tokens'>,
  userId: string,
  turn: Omit<TurnPrefix, 'token'>,
): string[] {
  const { messageId, conversationId } = turn
  const token = deps.tokens.sign({ userId, conversationId, messageId }, turn.createTime)
  return prefixFrames({ ...turn, token })
}

/** Opens a turn's log with its first items (fence 0: its runner claims it). */
export async function openTurnLog(
  deps: Pick<TurnDeps, 'logs' | 'tokens'>,
  userId: string,
  turn: Omit<TurnPrefix, 'token'>,
): Promise<void> {
  const { messageId, conversationId } = turn
  await deps.logs.open({ messageId, conversationId, userId }, signedPrefix(deps, userId, turn))
}

/** The reply as a turn's first frames add it: what later frames add again after a step (CONTRACT §21). */
export const replyStart = (turn: Turn): AssistantStart => ({
  id: turn.messageId,
  createTime: turn.createTime,
  modelSlug: turn.metadata.model_slug,
  parentId: turn.metadata.parent_id,
  messageType: turn.metadata.message_type ?? 'next',
})
