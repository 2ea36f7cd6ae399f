// SQL for shared links (CONTRACT §23, migration 010): make one for a user's
// conversation and message, find, change or delete a user's own, and read a
// public one with its branch. A link belongs to whoever owns the
// conversation, so every owner check joins conversations; plain SQL that
// runs on postgres.js and PGlite.
import type { Queryable } from '../../storage/db.ts'
import {
  TREE_ROW_COLUMNS,
  type TreeRow,
  type TreeRowRecord,
  treeRowOf,
} from '../sql/tree-repository.ts'

export interface ShareRow {
  id: string
  conversationId: string
  currentNodeId: string
  title: string
  isPublic: boolean
  createdAt: Date
  updatedAt: Date
}

type ShareRecord = {
  id: string
  conversation_id: string
  current_node_id: string
  title: string
  is_public: boolean
  created_at: Date
  updated_at: Date
}

const SHARE_COLUMNS =
  's.id, s.conversation_id, s.current_node_id, s.title, s.is_public, s.created_at, s.updated_at'

const shareOf = (row: ShareRecord): ShareRow => ({
  id: row.id,
  conversationId: row.conversation_id,
  currentNodeId: row.current_node_id,
  title: row.title,
  isPublic: row.is_public,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
})

/**
 * A new link to the branch up to `nodeId`, titled as the conversation, when
 * the conversation is the user's and the message is in it and finished;
 * undefined otherwise, and when that message already has a link.
 */
export async function insertShare(
  db: Queryable,
  share: { id: string; conversationId: string; nodeId: string; userId: string },
): Promise<ShareRow | undefined> {
  const rows = await db.query<ShareRecord>(
    `INSERT INTO shares AS s (id, conversation_id, current_node_id, title)
     SELECT $1, c.id, m.id, c.title
       FROM conversations c JOIN messages m ON m.conversation_id = c.id AND m.id = $3
      WHERE c.id = $2 AND c.user_id = $4 AND m.status <> 'in_progress'
     ON CONFLICT (conversation_id, current_node_id) DO NOTHING
     RETURNING ${SHARE_COLUMNS}`,
    [share.id, share.conversationId, share.nodeId, share.userId],
  )
  return rows[0] && shareOf(rows[0])
}

/** Why insertShare made nothing: the link already made, a reply still streaming, or nothing of the user's. */
export async function shareRefusal(
  db: Queryable,
  conversationId: string,
  nodeId: string,
  userId: string,
): Promise<{ existing: ShareRow } | { inProgress: true } | undefined> {
  const rows = await db.query<Partial<ShareRecord> & { status: string }>(
    `SELECT ${SHARE_COLUMNS}, m.status
       FROM conversations c JOIN messages m ON m.conversation_id = c.id AND m.id = $2
       LEFT JOIN shares s ON s.conversation_id = c.id AND s.current_node_id = m.id
      WHERE c.id = $1 AND c.user_id = $3`,
    [conversationId, nodeId, userId],
  )
  const row = rows[0]
  if (!row) return undefined
  if (row.id) return { existing: shareOf(row as ShareRecord) }
  return row.status === 'in_progress' ? { inProgress: true } : undefined
}

/** Sets the given fields of the user's link; undefined when it is not the user's (or missing). */
export async function updateShare(
  db: Queryable,
  shareId: string,
  userId: string,
  change: { title?: string; isPublic?: boolean },
): Promise<ShareRow | undefined> {
  const rows = await db.query<ShareRecord>(
    `UPDATE shares s SET title = COALESCE($3, s.title), is_public = COALESCE($4, s.is_public),
            updated_at = now()
       FROM conversations c
      WHERE s.id = $1 AND c.id = s.conversation_id AND c.user_id = $2
      RETURNING ${SHARE_COLUMNS}`,
    [shareId, userId, change.title ?? null, change.isPublic ?? null],
  )
  return rows[0] && shareOf(rows[0])
}

/** Deletes the user's link; false when it is not the user's (or missing). */
export async function deleteShare(
  db: Queryable,
  shareId: string,
  userId: string,
): Promise<boolean> {
  const rows = await db.query<{ id: string }>(
    `DELETE FROM shares s USING conversations c
      WHERE s.id = $1 AND c.id = s.conversation_id AND c.user_id = $2
      RETURNING s.id`,
    [shareId, userId],
  )
  return rows.length > 0
}

/** What a public link shows: the link, its conversation's few shared facts, and the branch, top first. */
export interface SharedBranch {
  share: ShareRow
  conversationCreatedAt: Date
  defaultModelSlug: string | null
  /** The messages a reader sees: hidden ones (an import's instructions, system and tool messages) left out. */
  rows: TreeRow[]
}

/** The public link `shareId` with its branch; undefined when missing or not public. */
export async function readSharedBranch(
  db: Queryable,
  shareId: string,
): Promise<SharedBranch | undefined> {
  const shares = await db.query<
    ShareRecord & { conversation_created_at: Date; default_model_slug: string | null }
  >(
    `SELECT ${SHARE_COLUMNS}, c.created_at AS conversation_created_at, c.default_model_slug
       FROM shares s JOIN conversations c ON c.id = s.conversation_id
      WHERE s.id = $1 AND s.is_public`,
    [shareId],
  )
  const found = shares[0]
  if (!found) return undefined
  // The branch from the shared message up its parents; a tree has no cycles,
  // but the depth bound keeps a bad row from looping.
  const rows = await db.query<TreeRowRecord & { hidden: boolean }>(
    `WITH RECURSIVE branch AS (
       SELECT m.seq, m.parent_id, 1 AS depth FROM messages m
        WHERE m.conversation_id = $1 AND m.id = $2
       UNION ALL
       SELECT m.seq, m.parent_id, branch.depth + 1
         FROM messages m JOIN branch ON m.conversation_id = $1 AND m.id = branch.parent_id
        WHERE branch.depth < 100000)
     SELECT ${TREE_ROW_COLUMNS}, m.hidden FROM branch JOIN messages m ON m.seq = branch.seq
      ORDER BY branch.depth DESC`,
    [found.conversation_id, found.current_node_id],
  )
  return {
    share: shareOf(found),
    conversationCreatedAt: found.conversation_created_at,
    defaultModelSlug: found.default_model_slug,
    rows: visible(rows),
  }
}

/**
 * The branch without its hidden messages, each shown one hanging from the
 * shown one before it: a reader of a link sees what the owner saw, and never
 * the owner's instructions an import kept hidden in the tree.
 */
function visible(branch: (TreeRowRecord & { hidden: boolean })[]): TreeRow[] {
  const shown: TreeRow[] = []
  for (const row of branch) {
    if (row.hidden) continue
    shown.push({ ...treeRowOf(row), parentId: shown.at(-1)?.id ?? null })
  }
  return shown
}
