// SQL for users, conversations and messages. Plain parameterized SQL that runs
// unchanged on postgres.js and PGlite.
import { conflict, notFound } from '../errors.ts'
import { type Queryable, sqlState, UNIQUE_VIOLATION } from '../storage/db.ts'
import type { StoredMessage, TextContent } from './messages.ts'

export interface ConversationRow {
  id: string
  title: string
  createdAt: Date
  updatedAt: Date
  /** Content of the newest message; undefined for a conversation without messages. */
  lastContent: TextContent | undefined
}

const missing = () => notFound('Conversation not found.')

const toDate = (seconds: number) => new Date(Math.round(seconds * 1000))

/** jsonb does not keep key order; clients expect `content_type` before `parts`. */
const textContent = (stored: TextContent): TextContent => ({
  content_type: stored.content_type,
  parts: stored.parts,
})

export async function ensureUser(tx: Queryable, userId: string): Promise<void> {
  await tx.query('INSERT INTO users (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [userId])
}

export async function createConversation(
  tx: Queryable,
  id: string,
  userId: string,
  title: string,
  at: Date,
): Promise<void> {
  await tx.query(
    'INSERT INTO conversations (id, user_id, title, created_at, updated_at) VALUES ($1, $2, $3, $4, $4)',
    [id, userId, title, at],
  )
}

/**
 * Locks the user's conversation for this transaction and answers its current
 * node; a missing conversation and someone else's answer the same 404.
 */
export async function lockOwnConversation(
  tx: Queryable,
  id: string,
  userId: string,
): Promise<{ currentNode: string | null }> {
  const rows = await tx.query<{ user_id: string; current_node: string | null }>(
    'SELECT user_id, current_node FROM conversations WHERE id = $1 FOR UPDATE',
    [id],
  )
  const row = rows[0]
  if (row?.user_id !== userId) throw missing()
  return { currentNode: row.current_node }
}

/**
 * Stores messages in order, each under its `parentId`, and bumps the
 * conversation; a repeated id is a 409.
 */
export async function insertMessages(
  tx: Queryable,
  conversationId: string,
  messages: readonly StoredMessage[],
  status: string,
): Promise<void> {
  for (const message of messages) {
    try {
      await tx.query(
        `INSERT INTO messages (id, conversation_id, parent_id, role, content, status, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5::text::jsonb, $6, $7, $7)`,
        [
          message.id,
          conversationId,
          message.parentId ?? null,
          message.role,
          JSON.stringify(message.content),
          status,
          toDate(message.createTime),
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
      toDate(last.createTime),
    ])
}

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
