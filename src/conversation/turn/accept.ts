// Accepting a send: the only step that can still fail with a plain HTTP error
// (404, 409). It opens the turn's log with the stream's first items, then
// stores the user messages and the reply's in-progress row in one statement:
// from then on the turn is queued for whichever instance holds the
// conversation's lease, and the sender reads the log.
import type { StoredMessage } from '../messages.ts'
import { textOf, titleFrom, unixSeconds } from '../messages.ts'
import { type ReplyMetadata, storeAcceptedTurn } from '../turn-repository.ts'
import { invalidateReads, type TurnDeps } from './deps.ts'
import { prefixFrames } from './prefix.ts'

export interface SendInput {
  userId: string
  conversationId: string
  /** True when the send creates the conversation. */
  isNew: boolean
  /** Input messages, each with its id already chosen. */
  messages: { id: string; parts: string[] }[]
  temperature?: number
}

export interface AcceptedTurn {
  conversationId: string
  /** The reply's id: its log's key. */
  messageId: string
  /** The user messages stored, in order. */
  inputs: StoredMessage[]
}

/** Queues a turn; throws 404 (not the user's conversation) or 409 (a stored message id). */
export async function acceptTurn(deps: TurnDeps, input: SendInput): Promise<AcceptedTurn> {
  const { conversationId, userId } = input
  const inputs: StoredMessage[] = input.messages.map((message) => ({
    id: message.id,
    role: 'user',
    content: { content_type: 'text', parts: message.parts },
    createTime: unixSeconds(),
  }))
  const last = inputs.at(-1)
  const first = inputs[0]
  if (!first || !last) throw new Error('acceptTurn: a send needs at least one message')
  const messageId = deps.newId()
  const createTime = unixSeconds()
  const metadata: ReplyMetadata = {
    model_slug: deps.model.slug,
    parent_id: last.id,
    ...(input.temperature === undefined ? {} : { temperature: input.temperature }),
  }
  const token = await deps.tokens.sign({ userId, conversationId, messageId })

  // The log exists before the turn is queued, so its runner always finds it.
  await deps.logs.open(
    { messageId, conversationId, userId },
    prefixFrames({
      conversationId,
      messageId,
      createTime,
      modelSlug: deps.model.slug,
      inputs,
      token,
    }),
  )
  try {
    await storeAcceptedTurn(deps.db, {
      userId,
      conversationId,
      ...(input.isNew ? { newTitle: titleFrom(textOf(first.content)) } : {}),
      inputs,
      reply: { id: messageId, createTime, metadata },
    })
  } catch (error) {
    await deps.logs
      .remove(messageId)
      .catch((cause) => deps.warn('could not drop a refused turn', cause))
    throw error
  }
  await invalidateReads(deps, conversationId, userId)
  return { conversationId, messageId, inputs }
}
