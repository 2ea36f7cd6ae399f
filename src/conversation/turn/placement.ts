// Where a send goes in the conversation's message tree (CONTRACT §10), decided
// inside the accepting transaction with the conversation locked. `next` stores
// the new messages under `parent_message_id` (default: the current node; a
// parent other than the current node starts a new branch, which is how an
// edited message is sent). `variant` stores nothing new: it answers again a
// user message already stored, so the new reply becomes a sibling of its
// earlier replies.
import { invalid, notFound } from '../../errors.ts'
import type { Queryable } from '../../storage/db.ts'
import { type MessageType, ROOT_ID } from '../messages.ts'
import { findMessage } from '../sql/tree-repository.ts'

export interface SendPlace {
  action: MessageType
  /** As the client sent it: absent, ROOT_ID, or a message id. */
  parentMessageId?: string
  /** For a variant: the id of the stored user message to answer again. */
  variantOf?: string
}

/** The conversation the send goes to: a new one, or an existing one at its current node. */
export type SendTarget = { isNew: true } | { isNew: false; currentNode: string | null }

const unknownMessage = (id: string) => notFound(`There is no message "${id}" in this conversation.`)

/** The message `given` names: the current node when absent, null for the top of the tree. */
async function resolveParent(
  tx: Queryable,
  conversationId: string,
  target: SendTarget,
  given: string | undefined,
): Promise<string | null> {
  // A new conversation starts at the top whatever parent it names: chatgpt.com
  // clients (gpt4free) send one they made up (CONTRACT §17).
  if (target.isNew) return null
  if (given === undefined) return target.currentNode
  if (given === ROOT_ID) return null
  const found = await findMessage(tx, conversationId, given)
  if (!found) throw unknownMessage(given)
  return found.id
}

/**
 * The parent of the first message the send stores (null: the top of the
 * tree); for a variant, checks the message it answers again. Throws
 * `not_found` for an id not in the conversation, `invalid` for a variant that
 * does not name a stored user message or names it under another parent.
 */
export async function placeSend(
  tx: Queryable,
  conversationId: string,
  target: SendTarget,
  send: SendPlace,
): Promise<string | null> {
  const given = send.parentMessageId
  const parentId = await resolveParent(tx, conversationId, target, given)
  if (send.action === 'next') return parentId

  const id = send.variantOf ?? ''
  const answered = target.isNew ? undefined : await findMessage(tx, conversationId, id)
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
