// Accepting a send: the only step that can still refuse it, with a domain
// error (not found, a conflict, invalid for a misplaced variant). It opens the
// turn's log with the stream's first items, then places the send in the
// conversation's tree (placement.ts) and stores the user messages and the
// reply's in-progress row, which becomes the current node - a new
// conversation in one statement with a deadline (first-send-repository.ts), an existing one in
// a transaction that locks it and reads its tree first. From then on the turn
// is queued for whichever instance holds the conversation's lease, and the
// sender reads the log. When the accepting process takes that lease for the
// send (the lease the runner asks for beside the log's open, so both go out in
// one round trip) and no other turn of the conversation is unfinished, the
// turn is stored claimed by it and starts there at once, without a claim.
// The log is opened with fence 0 either way: it is new, so no older writer
// can hold it, and a runner that takes a dead owner's turn raises its fence
// with its claim.

import { allInOrder } from '../../storage/db.ts'
import {
  type ReplyMetadata,
  type StoredMessage,
  type Turn,
  textOf,
  titleFrom,
  turnStepTime,
  unixSeconds,
} from '../messages.ts'
import { lockOwnConversation } from '../sql/conversations-repository.ts'
import { type FirstSend, storeFirstSend } from '../sql/first-send-repository.ts'
import { insertMessages } from '../sql/messages-repository.ts'
import { insertSendKey } from '../sql/send-keys-repository.ts'
import { insertReplyPlaceholder } from '../sql/turn-repository.ts'
import { invalidateReads, type TurnDeps } from './deps.ts'
import type { ModelChoice } from './model-choice.ts'
import { namedIds, placeSend, type SendPlace } from './placement.ts'
import { signedPrefix } from './prefix.ts'
import type { Send } from './send.ts'

/** How a send is to be accepted, as its caller (runner.ts) decided. */
export interface AcceptPlan {
  /** The send's conversation, or the id chosen for the new one it creates. */
  conversationId: string
  /** The model that answers (model-choice.ts). */
  choice: ModelChoice
  /**
   * The conversation's lease when this process is to run the turn, asked for
   * by the runner beside the log's open so both go out in one round trip. With
   * it the turn is stored claimed by its token (for an existing conversation,
   * only when no other turn of it is unfinished), so the runner starts it
   * without a claim. The runner gives it back when acceptTurn throws.
   */
  lease: Promise<{ token: number } | undefined>
}

export interface AcceptedTurn {
  conversationId: string
  /** The reply's id: its log's key. */
  messageId: string
  /** The user messages stored, in order (none for a variant). */
  inputs: StoredMessage[]
  /** The turn as stored claimed under the lease's token; absent when it queued unclaimed. */
  claimed?: Turn
}

/**
 * Queues a turn; throws `not_found` (not the user's conversation, unknown
 * message), `conflict` (a stored message id) or `invalid` (a misplaced variant).
 */
export async function acceptTurn(
  deps: TurnDeps,
  send: Send,
  plan: AcceptPlan,
): Promise<AcceptedTurn> {
  const { userId } = send
  const { conversationId } = plan
  const model = plan.choice.model.slug
  const variant = send.action === 'variant'
  // Each input message with its id: the client's, else a new one.
  const messages = send.messages.map((message) => ({ ...message, id: message.id ?? deps.newId() }))
  // Each message of the turn a step later than the one before: the reply is
  // later than what it answers, to the millisecond the database keeps.
  const now = unixSeconds()
  const inputs: StoredMessage[] = variant
    ? []
    : messages.map((message, index) => ({
        id: message.id,
        role: 'user',
        content: message.content,
        ...(message.attachments.length > 0 ? { attachments: message.attachments } : {}),
        createTime: turnStepTime(now, index),
      }))
  const answered = messages.at(-1)
  if (!answered) throw new Error('acceptTurn: a send needs at least one message')
  const isNew = send.conversationId === undefined
  const messageId = deps.newId()
  const createTime = turnStepTime(now, inputs.length)
  const metadata: ReplyMetadata = {
    model_slug: model,
    parent_id: answered.id,
    message_type: send.action,
    ...(send.temperature === undefined ? {} : { temperature: send.temperature }),
    ...(send.reasoningEffort === undefined ? {} : { reasoning_effort: send.reasoningEffort }),
    ...(isNew ? { first_turn: true as const } : {}),
  }

  const prefix = signedPrefix(deps, userId, {
    conversationId,
    messageId,
    createTime,
    modelSlug: model,
    parentId: answered.id,
    messageType: send.action,
    inputs,
  })
  // The log exists before the turn is queued, so its runner always finds it.
  const [leased, opened] = await Promise.allSettled([
    plan.lease,
    deps.logs.open({ messageId, conversationId, userId }, prefix),
  ])
  if (opened.status === 'rejected') throw opened.reason
  if (leased.status === 'rejected') {
    await dropLog(deps, messageId)
    throw leased.reason
  }
  const runToken = leased.value?.token
  const reply: Reply = { id: messageId, createTime, metadata, runToken }
  let claimed: Turn | undefined
  try {
    const where = { userId, conversationId, placement: placementOf(send, messages) }
    const stored = isNew
      ? {
          ...(await storeNew(deps, where, inputs, reply)),
          claimed: runToken !== undefined,
          instructions: null,
        }
      : await storeInExisting(
          deps,
          where,
          inputs,
          reply,
          plan.choice.named && send.action === 'next' ? model : undefined,
        )
    if (runToken !== undefined && stored.claimed)
      claimed = {
        messageId,
        conversationId,
        userId,
        seq: stored.replySeq,
        createTime,
        metadata,
        runToken,
        conversationInstructions: stored.instructions,
        userInstructions: stored.userInstructions,
      }
  } catch (error) {
    await dropLog(deps, messageId)
    throw error
  }
  await invalidateReads(deps, conversationId, userId)
  return { conversationId, messageId, inputs, ...(claimed ? { claimed } : {}) }
}

/** Removes the log of a send that was refused after its log was opened. */
async function dropLog(deps: TurnDeps, messageId: string): Promise<void> {
  await deps.logs
    .remove(messageId)
    .catch((cause) => deps.warn('could not drop a refused turn', cause))
}

type Reply = FirstSend['reply']

/** Where a send goes: whose conversation, and where in its tree (placement.ts). */
interface Destination {
  userId: string
  conversationId: string
  placement: SendPlace
}

/** A send creating its conversation: placed at the top of the tree, stored in one statement. */
async function storeNew(deps: TurnDeps, where: Destination, inputs: StoredMessage[], reply: Reply) {
  const { conversationId, userId } = where
  const first = inputs[0]
  // Placement reads nothing for a new conversation: it only checks what the send names.
  const parentId = placeSend({ isNew: true }, where.placement)
  chain(inputs, parentId)
  if (!first) throw new Error('acceptTurn: a new conversation needs a user message')
  const send = { userId, conversationId, title: titleFrom(textOf(first.content)), inputs, reply }
  // One statement, in one round trip, that stores nothing when the server
  // starts it past its deadline: a send refused then (a frozen database) is
  // never stored behind the 503 its client got (CONTRACT §19).
  return await storeFirstSend(deps.db, send)
}

/**
 * A send to an existing conversation, in one transaction: locked (with the
 * messages it names read in the same round trip), placed in its tree, stored.
 */
async function storeInExisting(
  deps: TurnDeps,
  where: Destination,
  inputs: StoredMessage[],
  reply: Reply,
  /** A `next` send that named its model makes it the conversation's (a regenerate answers with it once). */
  conversationModel: string | undefined,
) {
  const { conversationId, userId } = where
  return await deps.db.transaction(async (tx) => {
    const current = await lockOwnConversation(tx, conversationId, userId, namedIds(where.placement))
    const parentId = placeSend(
      { isNew: false, currentNode: current.currentNode, named: current.named },
      where.placement,
    )
    chain(inputs, parentId)
    // The writes go out together, each sent before the next, so they run in
    // this order in one round trip instead of one each: under load a round
    // trip waits for the event loop, and the connection is held meanwhile.
    const messages = insertMessages(tx, conversationId, inputs, 'finished_successfully')
    const placed = insertReplyPlaceholder(tx, conversationId, reply, conversationModel)
    // A retry of this send is refused here (turn/retried-send.ts); a variant stores no message.
    const first = inputs[0]
    const key =
      first && insertSendKey(tx, { userId, messageId: first.id, conversationId, replyId: reply.id })
    await allInOrder([messages, placed, key])
    const { seq, claimed } = await placed
    return {
      replySeq: seq,
      claimed,
      instructions: current.instructions,
      userInstructions: current.userInstructions,
    }
  })
}

const placementOf = (send: Send, messages: readonly { id: string }[]): SendPlace => ({
  action: send.action,
  parentMessageId: send.parentMessageId,
  variantOf: messages.at(-1)?.id ?? '',
})

/** Each input follows the one before it; the first follows the send's parent. */
function chain(inputs: StoredMessage[], parentId: string | null) {
  inputs.forEach((message, index) => {
    message.parentId = index === 0 ? parentId : (inputs[index - 1]?.id ?? null)
  })
}
