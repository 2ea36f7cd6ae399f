// Where a send goes in the conversation's message tree (CONTRACT §10), decided
// from what the statement locking the conversation read with it (the current
// node, and the messages the send names: namedIds). `next` stores
// the new messages under `parent_message_id` (default: the current node; a
// parent other than the current node starts a new branch, which is how an
// edited message is sent). `variant` stores nothing new: it answers again a
// user message already stored, so the new reply becomes a sibling of its
// earlier replies.
import { invalid, notFound } from '../../errors.ts'
import { type MessageType, ROOT_ID } from '../messages.ts'
import type { NamedIds, NamedMessages } from '../sql/conversations-repository.ts'

export interface SendPlace {
  action: MessageType
  /** As the client sent it: absent, ROOT_ID, or a message id. */
  parentMessageId?: string
  /** For a variant: the id of the stored user message to answer again. */
  variantOf?: string
}

/** The conversation the send goes to: a new one, or an existing one at its current node. */
export type SendTarget =
  | { isNew: true }
  | { isNew: false; currentNode: string | null; named: NamedMessages }

/** The ids of the messages a send names, for the lock of its conversation to look up. */
export function namedIds(send: SendPlace): NamedIds {
  const given = send.parentMessageId
  return {
    ...(given !== undefined && given !== ROOT_ID ? { parent: given } : {}),
    ...(send.action === 'variant' ? { answered: send.variantOf ?? '' } : {}),
  }
}

const unknownMessage = (id: string) => notFound(`There is no message "${id}" in this conversation.`)

/** The message `given` names: the current node when absent, null for the top of the tree. */
function resolveParent(target: SendTarget, given: string | undefined): string | null {
  // A new conversation starts at the top whatever parent it names: chatgpt.com
  // clients (gpt4free) send one they made up (CONTRACT §17).
  if (target.isNew) return null
  if (given === undefined) return target.currentNode
  if (given === ROOT_ID) return null
  const found = target.named.parent
  if (!found) throw unknownMessage(given)
  return found.id
}

/**
 * The parent of the first message the send stores (null: the top of the
 * tree); for a variant, checks the message it answers again. Throws
 * `not_found` for an id not in the conversation, `invalid` for a variant that
 * does not name a stored user message or names it under another parent.
 */
export function placeSend(target: SendTarget, send: SendPlace): string | null {
  const given = send.parentMessageId
  const parentId = resolveParent(target, given)
  if (send.action === 'next') return parentId

  const id = send.variantOf ?? ''
  const answered = target.isNew ? undefined : target.named.answered
  if (!answered) throw unknownMessage(id)
  if (answered.role !== 'user')
    throw invalid(
      `The field "messages[0].id" must name a user message to answer again; "${id}" is a reply.`,
    )
  if (given !== undefined && parentId !== answered.parentId)
    throw invalid(
      `The field "parent_message_id" must be the parent of message "${id}" (${answered.parentId ?? ROOT_ID}).`,
    )
  return answered.parentId
}
