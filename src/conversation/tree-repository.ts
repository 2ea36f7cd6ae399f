// SQL for the message tree of a conversation (CONTRACT §10): one message by
// id, the branch from the top of the tree down to a message, and the whole
// tree for the detail read. Plain SQL that runs on postgres.js and PGlite.
import type { Queryable } from '../storage/db.ts'
import { orderedContent, type StoredMessage, type TextContent } from './messages.ts'

/** Where a message sits in the tree. */
export interface TreePlace {
  id: string
  role: 'user' | 'assistant'
  parentId: string | null
}

/** A message of the tree as the detail read shows it. */
export interface TreeRow extends TreePlace {
  content: TextContent
  status: string
  metadata: Record<string, unknown>
  createdAt: Date
}

/** The message `id` of the conversation, or undefined when it has none by that id. */
export async function findMessage(
  db: Queryable,
  conversationId: string,
  id: string,
): Promise<TreePlace | undefined> {
  const rows = await db.query<{ id: string; role: 'user' | 'assistant'; parent_id: string | null }>(
    'SELECT id, role, parent_id FROM messages WHERE conversation_id = $1 AND id = $2',
    [conversationId, id],
  )
  const row = rows[0]
  return row && { id: row.id, role: row.role, parentId: row.parent_id }
}

/**
 * The last `limit` messages of the branch from the top of the tree down to
 * message `id`, oldest first: the context of a turn answering it. Replies still
 * in progress are never part of a context.
 */
export async function branchTo(
  db: Queryable,
  conversationId: string,
  id: string,
  limit: number,
): Promise<StoredMessage[]> {
  const rows = await db.query<{
    id: string
    parent_id: string | null
    role: 'user' | 'assistant'
    content: TextContent
    created_at: Date
  }>(
    `WITH RECURSIVE branch AS (
       SELECT id, parent_id, role, content, status, created_at, 1 AS depth
         FROM messages WHERE conversation_id = $1 AND id = $2
       UNION ALL
       SELECT m.id, m.parent_id, m.role, m.content, m.status, m.created_at, branch.depth + 1
         FROM messages m JOIN branch ON m.conversation_id = $1 AND m.id = branch.parent_id
        WHERE branch.depth < $3)
     SELECT id, parent_id, role, content, created_at FROM branch
      WHERE status <> 'in_progress' ORDER BY depth DESC`,
    [conversationId, id, limit],
  )
  return rows.map((row) => ({
    id: row.id,
    role: row.role,
    content: orderedContent(row.content),
    createTime: row.created_at.getTime() / 1000,
    parentId: row.parent_id,
  }))
}

/**
 * Every message of the user's conversation in creation order, with its current
 * node; undefined when the conversation is missing or not the user's (a
 * conversation is created together with its first message).
 */
export async function readTree(
  db: Queryable,
  conversationId: string,
  userId: string,
): Promise<{ currentNode: string | null; rows: TreeRow[] } | undefined> {
  const rows = await db.query<{
    id: string
    parent_id: string | null
    role: 'user' | 'assistant'
    content: TextContent
    status: string
    metadata: Record<string, unknown>
    created_at: Date
    current_node: string | null
  }>(
    `SELECT m.id, m.parent_id, m.role, m.content, m.status, m.metadata, m.created_at, c.current_node
       FROM messages m JOIN conversations c ON c.id = m.conversation_id
      WHERE m.conversation_id = $1 AND c.user_id = $2
      ORDER BY m.seq`,
    [conversationId, userId],
  )
  const first = rows[0]
  if (!first) return undefined
  return {
    currentNode: first.current_node,
    rows: rows.map((row) => ({
      id: row.id,
      parentId: row.parent_id,
      role: row.role,
      content: orderedContent(row.content),
      status: row.status,
      metadata: row.metadata,
      createdAt: row.created_at,
    })),
  }
}
