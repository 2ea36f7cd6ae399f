// SQL for the conversations table: creating, owning and listing a user's
// conversations. Plain parameterized SQL that runs unchanged on postgres.js
// and PGlite.
import { notFound } from '../../errors.ts'
import type { Queryable } from '../../storage/db.ts'
import {
  type EnabledInstructions,
  type MessageRole,
  orderedContent,
  type TextContent,
} from '../messages.ts'
import { findMessage, type TreePlace } from './tree-repository.ts'
import {
  type UserInstructionsColumns,
  userInstructionsColumns,
  userInstructionsOf,
} from './user-instructions.ts'

export interface ConversationRow {
  id: string
  title: string
  createdAt: Date
  updatedAt: Date
  isArchived: boolean
  /** Content of the newest message; undefined for a conversation without messages. */
  lastContent: TextContent | undefined
}

const missing = () => notFound('Conversation not found.')

/** The ids of the messages a send names: its parent, the user message a variant answers again. */
export interface NamedIds {
  parent?: string
  answered?: string
}

/** Those messages as found in the conversation; each absent when it has none by that id. */
export interface NamedMessages {
  parent?: TreePlace
  answered?: TreePlace
}

/**
 * Locks the user's conversation for this transaction and answers its current
 * node, the instructions it keeps (migration 009), the user's own (null when
 * off), and the messages a send names (`named`: its parent, the user message
 * a variant answers again), each absent when the conversation has none by
 * that id - one round trip. A missing conversation and someone else's are the
 * same `not_found`.
 */
export async function lockOwnConversation(
  tx: Queryable,
  id: string,
  userId: string,
  named: NamedIds = {},
): Promise<{
  currentNode: string | null
  instructions: string | null
  userInstructions: EnabledInstructions | null
  named: NamedMessages
}> {
  const rows = await tx.query<
    {
      user_id: string
      current_node: string | null
      instructions: string | null
      parent_found: string | null
      parent_role: MessageRole | null
      parent_parent: string | null
      answered_found: string | null
      answered_role: MessageRole | null
      answered_parent: string | null
    } & UserInstructionsColumns
  >(
    `SELECT c.user_id, c.current_node, c.instructions, ${userInstructionsColumns('s')},
            p.id AS parent_found, p.role AS parent_role, p.parent_id AS parent_parent,
            a.id AS answered_found, a.role AS answered_role, a.parent_id AS answered_parent
       FROM conversations c
       LEFT JOIN user_system_messages s ON s.user_id = c.user_id
       LEFT JOIN messages p ON p.conversation_id = c.id AND p.id = $2
       LEFT JOIN messages a ON a.conversation_id = c.id AND a.id = $3
      WHERE c.id = $1 FOR UPDATE OF c`,
    [id, named.parent ?? null, named.answered ?? null],
  )
  const row = rows[0]
  if (row?.user_id !== userId) throw missing()
  const place = (found: string | null, role: MessageRole | null, parentId: string | null) =>
    found === null || role === null ? undefined : { id: found, role, parentId }
  let parent = place(row.parent_found, row.parent_role, row.parent_parent)
  let answered = place(row.answered_found, row.answered_role, row.answered_parent)
  // The joins read the statement's snapshot, taken before it waited for the
  // lock: a message committed meanwhile (by the send holding the lock) is
  // looked for again now, with the lock held - as rare as it is, a send
  // naming it must not be a 404.
  if (named.parent !== undefined && !parent) parent = await findMessage(tx, id, named.parent)
  if (named.answered !== undefined && !answered)
    answered = await findMessage(tx, id, named.answered)
  return {
    currentNode: row.current_node,
    instructions: row.instructions,
    userInstructions: userInstructionsOf(row),
    named: { ...(parent ? { parent } : {}), ...(answered ? { answered } : {}) },
  }
}

/**
 * Every conversation of the user (archived or not) with its newest message
 * (not a hidden one of an import), newest update first.
 */
export async function listConversations(db: Queryable, userId: string): Promise<ConversationRow[]> {
  const rows = await db.query<{
    id: string
    title: string
    created_at: Date
    updated_at: Date
    is_archived: boolean
    last_content: TextContent | null
  }>(
    `SELECT c.id, c.title, c.created_at, c.updated_at, c.is_archived, last.content AS last_content
       FROM conversations c
       LEFT JOIN LATERAL (
         SELECT m.content FROM messages m
          WHERE m.conversation_id = c.id AND m.status <> 'in_progress' AND NOT m.hidden
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
    isArchived: row.is_archived,
    lastContent: row.last_content ? orderedContent(row.last_content) : undefined,
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

/**
 * Sets the title and/or the archive flag of the user's conversation; false
 * when it is missing or someone else's.
 */
export async function updateConversation(
  db: Queryable,
  conversationId: string,
  userId: string,
  change: { title?: string; isArchived?: boolean },
): Promise<boolean> {
  const rows = await db.query(
    `UPDATE conversations SET title = COALESCE($3, title), is_archived = COALESCE($4, is_archived)
      WHERE id = $1 AND user_id = $2 RETURNING 1`,
    [conversationId, userId, change.title ?? null, change.isArchived ?? null],
  )
  return rows.length === 1
}

/** Archives every conversation of the user. */
export async function archiveAllConversations(db: Queryable, userId: string): Promise<void> {
  await db.query(
    'UPDATE conversations SET is_archived = true WHERE user_id = $1 AND NOT is_archived',
    [userId],
  )
}

/**
 * What a delete removed: the conversations, and the replies this service
 * wrote (whose turn logs go too; imported ones never had one).
 */
export interface DeletedConversations {
  conversationIds: string[]
  replyIds: string[]
}

/**
 * Deletes the user's conversation (`conversationId`), or all of the user's
 * conversations when it is undefined, with their messages and feedback.
 */
export async function deleteConversationRows(
  db: Queryable,
  userId: string,
  conversationId: string | undefined,
): Promise<DeletedConversations> {
  // The SELECT sees the rows as they were before the DELETE (one snapshot).
  const rows = await db.query<{ conversation_id: string; reply_id: string | null }>(
    `WITH gone AS (
       DELETE FROM conversations WHERE user_id = $1 AND ($2::uuid IS NULL OR id = $2::uuid)
       RETURNING id)
     SELECT gone.id AS conversation_id, m.id AS reply_id
       FROM gone LEFT JOIN messages m
         ON m.conversation_id = gone.id AND m.role = 'assistant' AND m.wire IS NULL`,
    [userId, conversationId ?? null],
  )
  return {
    conversationIds: [...new Set(rows.map((row) => row.conversation_id))],
    replyIds: rows.flatMap((row) => (row.reply_id === null ? [] : [row.reply_id])),
  }
}
