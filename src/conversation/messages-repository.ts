// SQL for the messages table: storing a send's messages, and reading a
// conversation's history and a turn's context. Plain parameterized SQL that
// runs unchanged on postgres.js and PGlite.
import { conflict } from '../errors.ts'
import { type Queryable, sqlState, UNIQUE_VIOLATION } from '../storage/db.ts'
import { dateOf, orderedContent, type StoredMessage, type TextContent } from './messages.ts'

export interface HistoryRow {
  id: string
  role: string
  content: TextContent
  createdAt: Date
}

/** Stores messages in order and bumps the conversation; a repeated id is a 409. */
export async function insertMessages(
  tx: Queryable,
  conversationId: string,
  messages: readonly StoredMessage[],
  status: string,
): Promise<void> {
  for (const message of messages) {
    try {
      await tx.query(
        `INSERT INTO messages (id, conversation_id, role, content, status, created_at, updated_at)
         VALUES ($1, $2, $3, $4::text::jsonb, $5, $6, $6)`,
        [
          message.id,
          conversationId,
          message.role,
          JSON.stringify(message.content),
          status,
          dateOf(message.createTime),
        ],
      )
    } catch (error) {
      if (sqlState(error) === UNIQUE_VIOLATION)
        throw conflict(`A message with id "${message.id}" is already in this conversation.`)
      throw error
    }
  }
  const last = messages.at(-1)
  if (last)
    await tx.query('UPDATE conversations SET updated_at = $2 WHERE id = $1', [
      conversationId,
      dateOf(last.createTime),
    ])
}

/**
 * The conversation's messages in creation order; empty when it is missing or
 * not the user's (a conversation is created together with its first message).
 */
export async function readHistory(
  db: Queryable,
  conversationId: string,
  userId: string,
): Promise<HistoryRow[]> {
  const rows = await db.query<{ id: string; role: string; content: TextContent; created_at: Date }>(
    `SELECT m.id, m.role, m.content, m.created_at
       FROM messages m JOIN conversations c ON c.id = m.conversation_id
      WHERE m.conversation_id = $1 AND c.user_id = $2
      ORDER BY m.seq`,
    [conversationId, userId],
  )
  return rows.map((row) => ({
    id: row.id,
    role: row.role,
    content: orderedContent(row.content),
    createdAt: row.created_at,
  }))
}

/**
 * The newest `limit` finished messages stored before seq `beforeSeq`, oldest
 * first: a turn's context when the cache lost it. Replies still in progress
 * (queued or streaming) are never part of a context.
 */
export async function recentMessages(
  db: Queryable,
  conversationId: string,
  limit: number,
  beforeSeq: number,
): Promise<StoredMessage[]> {
  const rows = await db.query<{
    id: string
    role: 'user' | 'assistant'
    content: TextContent
    created_at: Date
  }>(
    `SELECT id, role, content, created_at FROM (
       SELECT seq, id, role, content, created_at FROM messages
        WHERE conversation_id = $1 AND seq < $3 AND status <> 'in_progress'
        ORDER BY seq DESC LIMIT $2
     ) recent ORDER BY seq`,
    [conversationId, limit, beforeSeq],
  )
  return rows.map((row) => ({
    id: row.id,
    role: row.role,
    content: orderedContent(row.content),
    createTime: row.created_at.getTime() / 1000,
  }))
}
