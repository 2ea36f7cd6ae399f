// A retried send never runs twice (CONTRACT §14). Every send stores its first
// input message id as a send key together with its messages
// (send-keys-repository.ts), so a send naming an id the user already sent is
// refused by the database as a conflict, whichever instance and however close
// in time - the one decision that holds for two identical sends at once. Only
// then is it looked at here: when it repeats the stored send (the same
// messages, in its conversation or with none named) it was a client's retry,
// and it answers with the original turn's stream from item 0, live or
// replayed, while that stream is kept. Anything else stays a conflict. The
// lookup is by the user's own key, so another user's message id never finds
// (or reveals) their turn: for them it is a send like any other.
import { conflict, DomainError } from '../../errors.ts'
import type { TurnLogStore } from '../../state/turn-log-store.ts'
import type { Queryable } from '../../storage/db.ts'
import { findSentTurn, type SentTurn } from '../sql/send-keys-repository.ts'
import type { SendAction } from './placement.ts'

/** A send as the client made it (ids it did not give are absent). */
export interface RefusedSend {
  userId: string
  conversationId?: string
  action: SendAction
  messages: readonly { id?: string; parts: readonly string[] }[]
}

/** Whether the send names the messages the stored send stored (ids it left out match any). */
function repeats(sent: SentTurn, send: RefusedSend): boolean {
  return (
    sent.inputs.length === send.messages.length &&
    send.messages.every((message, index) => {
      const stored = sent.inputs[index]
      return (
        stored !== undefined &&
        (message.id === undefined || message.id === stored.id) &&
        stored.parts.length === message.parts.length &&
        stored.parts.every((part, at) => part === message.parts[at])
      )
    })
  )
}

/**
 * The reply whose stream answers a send refused with `refusal`, when the send
 * is a retry of one stored earlier; otherwise throws: `refusal` itself when
 * no send of the user began with its first message id, a conflict saying why
 * when one did but this send is not its retry or its stream is gone.
 */
export async function originalOfRetry(
  deps: { db: Queryable; logs: TurnLogStore },
  send: RefusedSend,
  refusal: unknown,
): Promise<string> {
  const id = send.messages[0]?.id
  const isConflict = refusal instanceof DomainError && refusal.kind === 'conflict'
  // A variant stores no message: answering one again is never a retry.
  if (!isConflict || send.action !== 'next' || id === undefined) throw refusal
  const sent = await findSentTurn(deps.db, send.userId, id)
  if (!sent) throw refusal
  if (send.conversationId !== undefined && send.conversationId !== sent.conversationId)
    throw conflict(`A message with id "${id}" was already sent, in another conversation.`)
  if (!repeats(sent, send))
    throw conflict(`A message with id "${id}" was already sent, with other messages.`)
  const log = await deps.logs.info(sent.replyId)
  if (!log || log.userId !== send.userId || log.conversationId !== sent.conversationId)
    throw conflict(
      `A message with id "${id}" was already sent and its reply is stored in conversation ` +
        `${sent.conversationId}; its stream is no longer kept.`,
    )
  return sent.replyId
}
