// SQL for the conversation search (CONTRACT §11): the user's conversations
// whose title or any message contains the text, newest update first. Message
// text is matched through messages_text_trgm_idx (migration 004), the trigram
// index over message_text(content): the statement uses that same expression.
import type { Queryable } from '../../storage/db.ts'
import { containsPattern } from '../../storage/like-pattern.ts'

export interface SearchRow {
  id: string
  title: string
  updatedAt: Date
  /** Text of the conversation's first message containing the query; null when only the title does. */
  messageText: string | null
}

/** $1 user, $2 containsPattern(query), $3 limit. */
export const SEARCH_SQL = `
  SELECT c.id, c.title, c.updated_at,
         (SELECT message_text(m.content) FROM messages m
           WHERE m.conversation_id = c.id AND message_text(m.content) ILIKE $2 ESCAPE '\\'
           ORDER BY m.seq LIMIT 1) AS message_text
    FROM conversations c
   WHERE c.user_id = $1
     AND (c.title ILIKE $2 ESCAPE '\\'
          OR c.id IN (SELECT m.conversation_id FROM messages m
                       WHERE message_text(m.content) ILIKE $2 ESCAPE '\\'))
   ORDER BY c.updated_at DESC, c.id
   LIMIT $3`

/** Conversations of the user containing `query` (literally, any case), newest update first. */
export async function searchConversations(
  db: Queryable,
  userId: string,
  query: string,
  limit: number,
): Promise<SearchRow[]> {
  const rows = await db.query<{
    id: string
    title: string
    updated_at: Date
    message_text: string | null
  }>(SEARCH_SQL, [userId, containsPattern(query), limit])
  return rows.map((row) => ({
    id: row.id,
    title: row.title,
    updatedAt: row.updated_at,
    messageText: row.message_text,
  }))
}
