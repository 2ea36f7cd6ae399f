// SQL for a conversation's title as its first turn sets it (CONTRACT §11).
import type { Queryable } from '../../storage/db.ts'
import { type TextContent, textOf } from '../messages.ts'

/** The stored title and the text of the first user message; undefined when the conversation is gone. */
export async function readNaming(
  db: Queryable,
  conversationId: string,
): Promise<{ title: string; firstUserText: string } | undefined> {
  const rows = await db.query<{ title: string; first: TextContent | null }>(
    `SELECT c.title,
            (SELECT m.content FROM messages m
              WHERE m.conversation_id = c.id AND m.role = 'user' ORDER BY m.seq LIMIT 1) AS first
       FROM conversations c WHERE c.id = $1`,
    [conversationId],
  )
  const row = rows[0]
  return row && { title: row.title, firstUserText: row.first ? textOf(row.first) : '' }
}

export async function storeTitle(db: Queryable, conversationId: string, title: string) {
  await db.query('UPDATE conversations SET title = $2 WHERE id = $1', [conversationId, title])
}
