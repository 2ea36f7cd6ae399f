// SQL for the message tree of a conversation (CONTRACT §10, §17): one message
// by id, the branch from the top of the tree down to a message, and the whole
// tree for the detail read. Plain SQL that runs on postgres.js and PGlite.
import type { Queryable } from '../../storage/db.ts'
import {
  attachmentsOf,
  type MessageContent,
  type MessageRole,
  orderedContent,
  type StoredMessage,
  type UserContent,
  wireContent,
} from '../messages.ts'

/** Where a message sits in the tree. */
export interface TreePlace {
  id: string
  role: MessageRole
  parentId: string | null
}

/** What an imported message said of itself that this service derives for its own (CONTRACT §17). */
export interface MessageWire {
  author_name: string | null
  author_metadata: Record<string, unknown>
  end_turn: boolean | null
  weight: number
  recipient: string
  channel: string | null
}

/** A message of the tree as the detail read shows it. */
export interface TreeRow extends TreePlace {
  content: MessageContent
  status: string
  metadata: Record<string, unknown>
  createdAt: Date
  updatedAt: Date
  /** Null for the messages of this service's own turns. */
  wire: MessageWire | null
}

/** A conversation as its detail shows it, besides its messages. */
export interface ConversationHead {
  id: string
  title: string
  createdAt: Date
  updatedAt: Date
  isArchived: boolean
  currentNode: string | null
  /** The model the conversation answers with (CONTRACT §15); null before it stored one. */
  defaultModelSlug: string | null
}

/** The columns of a TreeRow, selected from `messages m`. */
export const TREE_ROW_COLUMNS =
  'm.id, m.parent_id, m.role, m.content, m.status, m.metadata, m.created_at, m.updated_at, m.wire'

/** A selected TreeRow, as the drivers give it. */
export type TreeRowRecord = {
  id: string
  parent_id: string | null
  role: MessageRole
  content: MessageContent
  status: string
  metadata: Record<string, unknown>
  created_at: Date
  updated_at: Date
  wire: MessageWire | null
}

export const treeRowOf = (row: TreeRowRecord): TreeRow => ({
  id: row.id,
  parentId: row.parent_id,
  role: row.role,
  content: wireContent(row.content),
  status: row.status,
  metadata: row.metadata,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
  wire: row.wire,
})

/** The message `id` of the conversation, or undefined when it has none by that id. */
export async function findMessage(
  db: Queryable,
  conversationId: string,
  id: string,
): Promise<TreePlace | undefined> {
  const rows = await db.query<{ id: string; role: MessageRole; parent_id: string | null }>(
    'SELECT id, role, parent_id FROM messages WHERE conversation_id = $1 AND id = $2',
    [conversationId, id],
  )
  const row = rows[0]
  return row && { id: row.id, role: row.role, parentId: row.parent_id }
}

/**
 * The last `limit` messages of the branch from the top of the tree down to
 * message `id`, oldest first: the context of a turn answering it. Replies still
 * in progress and hidden messages (imported system and tool messages) are
 * never part of a context; the walk up the tree stops once it has `limit`.
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
    content: UserContent
    metadata: Record<string, unknown>
    created_at: Date
  }>(
    `WITH RECURSIVE branch AS (
       SELECT id, parent_id, role, content, metadata, created_at, 1 AS depth,
              (status <> 'in_progress' AND NOT hidden) AS context,
              (status <> 'in_progress' AND NOT hidden)::int AS found
         FROM messages WHERE conversation_id = $1 AND id = $2
       UNION ALL
       SELECT m.id, m.parent_id, m.role, m.content, m.metadata, m.created_at, branch.depth + 1,
              (m.status <> 'in_progress' AND NOT m.hidden),
              branch.found + (m.status <> 'in_progress' AND NOT m.hidden)::int
         FROM messages m JOIN branch ON m.conversation_id = $1 AND m.id = branch.parent_id
        WHERE branch.found < $3)
     SELECT id, parent_id, role, content, metadata, created_at FROM branch
      WHERE context ORDER BY depth DESC`,
    [conversationId, id, limit],
  )
  return rows.map((row) => {
    // A user message's files (CONTRACT §20): its model request reads them.
    const attachments = row.role === 'user' ? attachmentsOf(row.metadata) : undefined
    return {
      id: row.id,
      role: row.role,
      content: orderedContent(row.content),
      ...(attachments ? { attachments } : {}),
      createTime: row.created_at.getTime() / 1000,
      parentId: row.parent_id,
    }
  })
}

/**
 * The user's conversation with every message in creation order; undefined
 * when the conversation is missing or not the user's (a conversation is
 * created together with its first message).
 */
export async function readTree(
  db: Queryable,
  conversationId: string,
  userId: string,
): Promise<{ head: ConversationHead; rows: TreeRow[] } | undefined> {
  const rows = await db.query<
    TreeRowRecord & {
      title: string
      conversation_created_at: Date
      conversation_updated_at: Date
      is_archived: boolean
      current_node: string | null
      default_model_slug: string | null
    }
  >(
    `SELECT ${TREE_ROW_COLUMNS}, c.title, c.created_at AS conversation_created_at,
            c.updated_at AS conversation_updated_at, c.is_archived, c.current_node,
            c.default_model_slug
       FROM messages m JOIN conversations c ON c.id = m.conversation_id
      WHERE m.conversation_id = $1 AND c.user_id = $2
      ORDER BY m.seq`,
    [conversationId, userId],
  )
  const first = rows[0]
  if (!first) return undefined
  return {
    head: {
      id: conversationId,
      title: first.title,
      createdAt: first.conversation_created_at,
      updatedAt: first.conversation_updated_at,
      isArchived: first.is_archived,
      currentNode: first.current_node,
      defaultModelSlug: first.default_model_slug,
    },
    rows: rows.map(treeRowOf),
  }
}
