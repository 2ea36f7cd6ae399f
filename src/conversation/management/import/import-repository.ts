// SQL for storing imported conversations (CONTRACT §17): where each goes (its
// own id when that is free, a new one when someone else has it, nowhere when
// this user already has it), and a batch of them with their whole trees in
// one transaction, so each conversation is stored whole or not at all, and a
// large import costs a commit per batch, not per conversation. Plain SQL that
// runs unchanged on postgres.js and PGlite.
import type { Db, Queryable } from '../../../storage/db.ts'
import { dateOf } from '../../messages.ts'
import type { ImportedConversation } from './chatgpt-conversation.ts'

/** Messages inserted per statement: a bounded parameter, a few statements for a long conversation. */
const ROWS_PER_INSERT = 500

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** Where an imported conversation goes. */
export type Placement =
  | { store: true; conversationId: string }
  | { store: false; reason: 'already imported' | 'already exists' }

/**
 * Where the user's import of `sourceId` goes: nowhere when it was imported
 * before or is the user's own conversation (importing one's own export), its
 * own id when that is a free UUID, else a new id.
 */
export async function placeImport(
  db: Queryable,
  userId: string,
  sourceId: string,
  newId: () => string,
): Promise<Placement> {
  const ownId = UUID.test(sourceId) ? sourceId.toLowerCase() : null
  const rows = await db.query<{ id: string; user_id: string; import_source: string | null }>(
    `SELECT id, user_id, import_source FROM conversations
      WHERE (user_id = $1 AND import_source = $2) OR id = $3::uuid`,
    [userId, sourceId, ownId],
  )
  if (rows.some((row) => row.user_id === userId && row.import_source === sourceId))
    return { store: false, reason: 'already imported' }
  const taken = rows.find((row) => row.id === ownId)
  if (taken?.user_id === userId) return { store: false, reason: 'already exists' }
  return { store: true, conversationId: ownId !== null && !taken ? ownId : newId() }
}

/** What became of one conversation of a batch: stored, or why not. */
export type Stored = { stored: true } | { stored: false; reason: string }

/**
 * Stores the conversations and their messages as the user's, in one
 * transaction: each where placeImport puts it, or not at all when it was
 * imported before or its id or source was taken meanwhile by a concurrent
 * import. Answers, in order, what became of each.
 */
export function storeImports(
  db: Db,
  userId: string,
  conversations: readonly ImportedConversation[],
  newId: () => string,
): Promise<Stored[]> {
  return db.transaction(async (tx) => {
    await tx.query('INSERT INTO users (id) VALUES ($1) ON CONFLICT (id) DO NOTHING', [userId])
    const outcomes: Stored[] = []
    for (const conversation of conversations) {
      const place = await placeImport(tx, userId, conversation.sourceId, newId)
      const stored =
        place.store && (await storeImport(tx, userId, place.conversationId, conversation))
      outcomes.push(
        stored
          ? { stored: true }
          : { stored: false, reason: place.store ? 'already imported' : place.reason },
      )
    }
    return outcomes
  })
}

/** Stores one conversation inside the caller's transaction; false (nothing stored) when its id or source is taken. */
async function storeImport(
  tx: Queryable,
  userId: string,
  conversationId: string,
  conversation: ImportedConversation,
): Promise<boolean> {
  const created = await tx.query(
    `INSERT INTO conversations (id, user_id, title, created_at, updated_at, is_archived,
                                  current_node, import_source, default_model_slug, instructions)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT DO NOTHING RETURNING id`,
    [
      conversationId,
      userId,
      conversation.title,
      dateOf(conversation.createTime),
      dateOf(conversation.updateTime),
      conversation.isArchived,
      conversation.currentNode,
      conversation.sourceId,
      conversation.defaultModelSlug,
      conversation.instructions,
    ],
  )
  if (created.length === 0) return false
  const { messages } = conversation
  for (let start = 0; start < messages.length; start += ROWS_PER_INSERT) {
    const rows = messages.slice(start, start + ROWS_PER_INSERT).map((message) => ({
      id: message.id,
      parent_id: message.parentId,
      role: message.role,
      content: message.content,
      status: message.status,
      metadata: message.metadata,
      created_at: dateOf(message.createTime).toISOString(),
      updated_at: dateOf(message.updateTime).toISOString(),
      wire: message.wire,
      hidden: message.hidden,
    }))
    // Parents come first, so each one exists before its children reference it.
    await tx.query(
      `INSERT INTO messages (id, conversation_id, parent_id, role, content, status, metadata,
                               created_at, updated_at, wire, hidden)
         SELECT m.id, $1, m.parent_id, m.role, m.content, m.status, m.metadata,
                m.created_at, m.updated_at, m.wire, m.hidden
           FROM ROWS FROM (jsonb_to_recordset($2::text::jsonb) AS (id text, parent_id text,
                  role text, content jsonb, status text, metadata jsonb, created_at timestamptz,
                  updated_at timestamptz, wire jsonb, hidden boolean))
                WITH ORDINALITY AS m(id, parent_id, role, content, status, metadata, created_at,
                                     updated_at, wire, hidden, n)
          ORDER BY m.n`,
      [conversationId, JSON.stringify(rows)],
    )
  }
  return true
}
