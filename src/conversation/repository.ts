// SQL for users, conversations and messages. Plain parameterized SQL that runs
// unchanged on postgres.js and PGlite.
import type { Queryable } from '../storage/db.ts'
import type { StoredMessage, TextContent } from './messages.ts'

export interface ConversationRow {
  id: string
  title: string
  createdAt: Date
  updatedAt: Date
  /** Content of the newest message; undefined for a conversation without messages. */
  lastContent: TextContent | undefined
}

export interface HistoryRow {
  id: string
  role: string
  content: TextContent
  createdAt: Date
}

/** jsonb does not keep key order; clients expect `content_type` before `parts`. */
const textContent = (stored: TextContent): TextContent => ({
  content_type: stored.content_type,
  parts: stored.parts,
})

/** Every conversation of the user with its newest message, newest update first. */
export async function listConversations(db: Queryable, userId: string): Promise<ConversationRow[]> {
  const rows = await db.query<{
    id: string
    title: string
    created_at: Date
    updated_at: Date
    last_content: TextContent | null
  }>(
    `SELECT c.id, c.title, c.created_at, c.updated_at, last.content AS last_content
       FROM conversations c
       LEFT JOIN LATERAL (
         SELECT m.content FROM messages m
          WHERE m.conversation_id = c.id AND m.status <> 'in_progress'
          ORDER BY m.seq DESC LIMIT 1
       ) last ON true
      WHERE c.user_id = $1
      ORDER BY c.updated_at DESC, c.id`,
    [userId],
  )
  return rows.map((row) => ({
    id: row.id,
    title: row.title,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    lastContent: row.last_content ? textContent(row.last_content) : undefined,
  }))
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
    content: textContent(row.content),
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
    content: textContent(row.content),
    createTime: row.created_at.getTime() / 1000,
  }))
}

/** Whether the conversation exists and is the user's (someone else's answers like a missing one). */
export async function isOwnConversation(
  db: Queryable,
  conversationId: string,
  userId: string,
): Promise<boolean> {
  const rows = await db.query('SELECT 1 FROM conversations WHERE id = $1 AND user_id = $2', [
    conversationId,
    userId,
  ])
  return rows.length === 1
}
