// SQL for send keys (CONTRACT §14, migration 006): the first input message id
// of each send, per user, naming the turn the send started. Storing one is
// part of accepting a send (in its transaction, or in the statement of a
// first send: first-send-repository.ts), so the database alone decides which
// of two identical sends goes through. Plain parameterized SQL that runs
// unchanged on postgres.js and PGlite.
import { conflict } from '../../errors.ts'
import { type Queryable, sqlState, UNIQUE_VIOLATION } from '../../storage/db.ts'

export interface SendKey {
  userId: string
  /** The send's first input message id. */
  messageId: string
  conversationId: string
  /** The reply the send started. */
  replyId: string
}

/** Stores a send's key; `conflict` when the user sent this message id before. */
export async function insertSendKey(tx: Queryable, key: SendKey): Promise<void> {
  try {
    await tx.query(
      `INSERT INTO send_keys (user_id, message_id, conversation_id, reply_id)
       VALUES ($1, $2, $3, $4)`,
      [key.userId, key.messageId, key.conversationId, key.replyId],
    )
  } catch (error) {
    if (sqlState(error) === UNIQUE_VIOLATION)
      throw conflict(`A message with id "${key.messageId}" was already sent.`)
    throw error
  }
}

/** A send as stored: where it went, the reply it started, and its user messages in order. */
export interface SentTurn {
  conversationId: string
  replyId: string
  inputs: { id: string; parts: unknown[] }[]
}

/**
 * The send of this user whose first input message had this id, if one is
 * stored. Its user messages are those stored with it: from that message up
 * to its reply (a send's rows are stored together, with the conversation
 * locked, so nothing else lies between them).
 */
export async function findSentTurn(
  db: Queryable,
  userId: string,
  messageId: string,
): Promise<SentTurn | undefined> {
  const rows = await db.query<{
    conversation_id: string
    reply_id: string
    inputs: { id: string; parts: unknown[] }[]
  }>(
    `SELECT k.conversation_id, k.reply_id,
            (SELECT COALESCE(jsonb_agg(jsonb_build_object('id', m.id, 'parts', m.content -> 'parts')
                                       ORDER BY m.seq), '[]'::jsonb)
               FROM messages m
              WHERE m.conversation_id = k.conversation_id AND m.role = 'user'
                AND m.seq >= first.seq AND m.seq < reply.seq) AS inputs
       FROM send_keys k
       JOIN conversations c ON c.id = k.conversation_id AND c.user_id = k.user_id
       JOIN messages first ON first.conversation_id = k.conversation_id AND first.id = k.message_id
       JOIN messages reply ON reply.conversation_id = k.conversation_id AND reply.id = k.reply_id
      WHERE k.user_id = $1 AND k.message_id = $2`,
    [userId, messageId],
  )
  const row = rows[0]
  if (!row) return undefined
  return { conversationId: row.conversation_id, replyId: row.reply_id, inputs: row.inputs }
}
