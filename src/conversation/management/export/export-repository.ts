// SQL for the export (CONTRACT §17): a user's conversations page by page in
// creation order (a keyset on created_at and id, so a page costs the same
// however deep into the list it is), each with its message count, and the
// messages of a few conversations at a time. Plain SQL that runs on
// postgres.js and PGlite.
import type { Queryable } from '../../../storage/db.ts'
import {
  type ConversationHead,
  TREE_ROW_COLUMNS,
  type TreeRow,
  type TreeRowRecord,
  treeRowOf,
} from '../../sql/tree-repository.ts'

/** Where the next page starts: after this conversation. */
export interface ExportCursor {
  /** created_at as the database prints it: exact to the microsecond, unlike a Date. */
  createdAt: string
  id: string
}

export interface ExportedHead extends ConversationHead {
  messageCount: number
  cursor: ExportCursor
}

/**
 * Up to `limit` of the user's conversations after `after`, oldest first;
 * `archived` undefined lists both kinds.
 */
export async function exportHeads(
  db: Queryable,
  userId: string,
  archived: boolean | undefined,
  after: ExportCursor | undefined,
  limit: number,
): Promise<ExportedHead[]> {
  const rows = await db.query<{
    id: string
    title: string
    created_at: Date
    updated_at: Date
    is_archived: boolean
    current_node: string | null
    default_model_slug: string | null
    created_key: string
    message_count: number
  }>(
    `SELECT c.id, c.title, c.created_at, c.updated_at, c.is_archived, c.current_node,
            c.default_model_slug, c.created_at::text AS created_key,
            (SELECT count(*)::int FROM messages m WHERE m.conversation_id = c.id) AS message_count
       FROM conversations c
      WHERE c.user_id = $1 AND ($2::boolean IS NULL OR c.is_archived = $2::boolean)
        AND ($3::text IS NULL OR (c.created_at, c.id) > ($3::timestamptz, $4::uuid))
      ORDER BY c.created_at, c.id
      LIMIT $5`,
    [userId, archived ?? null, after?.createdAt ?? null, after?.id ?? null, limit],
  )
  return rows.map((row) => ({
    id: row.id,
    title: row.title,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    isArchived: row.is_archived,
    currentNode: row.current_node,
    defaultModelSlug: row.default_model_slug,
    messageCount: row.message_count,
    cursor: { createdAt: row.created_key, id: row.id },
  }))
}

/** The messages of these conversations, each conversation's in creation order. */
export async function exportMessages(
  db: Queryable,
  conversationIds: readonly string[],
): Promise<Map<string, TreeRow[]>> {
  const rows = await db.query<TreeRowRecord & { conversation_id: string }>(
    `SELECT m.conversation_id, ${TREE_ROW_COLUMNS} FROM messages m
      WHERE m.conversation_id = ANY($1::uuid[])
      ORDER BY m.conversation_id, m.seq`,
    [conversationIds],
  )
  const byConversation = new Map<string, TreeRow[]>()
  for (const row of rows) {
    const list = byConversation.get(row.conversation_id) ?? []
    if (list.length === 0) byConversation.set(row.conversation_id, list)
    list.push(treeRowOf(row))
  }
  return byConversation
}
