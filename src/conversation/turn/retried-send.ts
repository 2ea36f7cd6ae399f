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
import { type MultimodalPart, readMultimodalMessage } from '../../files/multimodal-message.ts'
import type { TurnLogStore } from '../../state/turn-log/turn-log-store.ts'
import type { Queryable } from '../../storage/db.ts'
import type { MessageType } from '../messages.ts'
import { findSentTurn, type SentTurn } from '../sql/send-keys-repository.ts'
import type { Send } from './send.ts'

/** What a send is compared on to tell a retry: its messages as the client made them (ids it did not give are absent). */
interface RetryCandidate {
  userId: string
  conversationId?: string
  action: MessageType
  messages: readonly { id?: string; parts: readonly MultimodalPart[] }[]
}

/** Keys sorted at every depth: jsonb does not keep the order a client sent. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (typeof value !== 'object' || value === null) return value
  return Object.fromEntries(
    Object.keys(value)
      .sort()
      .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
  )
}

/** Whether a stored part is the part sent: the same text, or the same image pointer (CONTRACT §20). */
const samePart = (stored: unknown, sent: MultimodalPart) =>
  typeof sent === 'string'
    ? stored === sent
    : JSON.stringify(canonical(stored)) === JSON.stringify(canonical(sent))

/** Whether the send names the messages the stored send stored (ids it left out match any). */
function repeats(sent: SentTurn, send: RetryCandidate): boolean {
  return (
    sent.inputs.length === send.messages.length &&
    send.messages.every((message, index) => {
      const stored = sent.inputs[index]
      return (
        stored !== undefined &&
        (message.id === undefined || message.id === stored.id) &&
        stored.parts.length === message.parts.length &&
        stored.parts.every((part, at) => {
          const sent = message.parts[at]
          return sent !== undefined && samePart(part, sent)
        })
      )
    })
  )
}

type RetryDeps = { db: Queryable; logs: TurnLogStore }

/**
 * What a stored send says of `send`: the reply whose stream answers it when
 * it is a retry, a conflict saying why when the user sent its first message
 * id before but this is not a retry (or the stream is gone), undefined when
 * the user never sent that id.
 */
/** The turn whose stream answers a retried send. */
export interface OriginalTurn {
  conversationId: string
  messageId: string
}

async function storedOriginal(
  deps: RetryDeps,
  send: RetryCandidate,
): Promise<OriginalTurn | DomainError | undefined> {
  const id = send.messages[0]?.id
  // A variant stores no message: answering one again is never a retry.
  if (send.action !== 'next' || id === undefined) return undefined
  const sent = await findSentTurn(deps.db, send.userId, id)
  if (!sent) return undefined
  if (send.conversationId !== undefined && send.conversationId !== sent.conversationId)
    return conflict(`A message with id "${id}" was already sent, in another conversation.`)
  if (!repeats(sent, send))
    return conflict(`A message with id "${id}" was already sent, with other messages.`)
  const log = await deps.logs.info(sent.replyId)
  if (!log || log.userId !== send.userId || log.conversationId !== sent.conversationId)
    return conflict(
      `A message with id "${id}" was already sent and its reply is stored in conversation ` +
        `${sent.conversationId}; its stream is no longer kept.`,
    )
  return { conversationId: sent.conversationId, messageId: sent.replyId }
}

/**
 * The reply whose stream answers a send refused with `refusal`, when the send
 * is a retry of one stored earlier; otherwise throws: `refusal` itself when
 * it was no conflict or no send of the user began with its first message id,
 * a conflict saying why when one did but this send is not its retry or its
 * stream is gone.
 */
export async function originalOfRetry(
  deps: RetryDeps,
  send: Send,
  refusal: unknown,
): Promise<OriginalTurn> {
  if (!(refusal instanceof DomainError && refusal.kind === 'conflict')) throw refusal
  const original = await storedOriginal(deps, {
    ...send,
    messages: send.messages.map((message) => ({ id: message.id, parts: message.content.parts })),
  })
  if (original === undefined) throw refusal
  if (original instanceof DomainError) throw original
  return original
}

/**
 * Whether a send body (as the client sent it, not yet validated) repeats a
 * send of this user whose stream is still kept: what lets a retry past the
 * sends limit (rate-limit-plugin.ts). Anything malformed is not a retry.
 */
export async function isRetriedSend(
  deps: RetryDeps,
  userId: string,
  body: unknown,
): Promise<boolean> {
  const send = refusedSendOf(userId, body)
  if (send === undefined) return false
  // Unable to tell (the database is away): not a retry, refused as any send past the limit.
  const original = await storedOriginal(deps, send).catch(() => undefined)
  return original !== undefined && !(original instanceof DomainError)
}

/** A raw multimodal message's parts as a send stores them; undefined when malformed. */
function multimodalParts(content: unknown): MultimodalPart[] | undefined {
  try {
    return readMultimodalMessage(content, undefined, 'message').parts
  } catch {
    return undefined
  }
}

/** The send a raw body describes, when it is well-formed enough to be a retry. */
function refusedSendOf(userId: string, body: unknown): RetryCandidate | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const fields = body as Record<string, unknown>
  const action = fields.action ?? 'next'
  const conversationId = fields.conversation_id
  if (action !== 'next' || !Array.isArray(fields.messages)) return undefined
  if (conversationId !== undefined && conversationId !== null && typeof conversationId !== 'string')
    return undefined
  const messages: RetryCandidate['messages'][number][] = []
  for (const message of fields.messages as unknown[]) {
    const id = (message as { id?: unknown } | null)?.id
    const content = (message as { content?: { content_type?: unknown; parts?: unknown } } | null)
      ?.content
    // Image pointers as the send would store them (gpt4free's lack their content_type).
    const parts =
      content?.content_type === 'multimodal_text' ? multimodalParts(content) : content?.parts
    if (typeof id !== 'string' || !Array.isArray(parts)) return undefined
    if (content?.content_type !== 'multimodal_text' && !parts.every((p) => typeof p === 'string'))
      return undefined
    messages.push({ id, parts: parts as MultimodalPart[] })
  }
  return {
    userId,
    action: 'next',
    messages,
    ...(typeof conversationId === 'string' ? { conversationId } : {}),
  }
}
