// SQL for the model a conversation is answered with by default (CONTRACT §15,
// column conversations.default_model_slug, migration 007). It is written with
// the sends that set it (first-send-repository.ts, turn-repository.ts).
import type { Queryable } from '../../storage/db.ts'

/** The user's conversation's model slug; undefined when it has none stored or is not the user's. */
export async function conversationModelSlug(
  db: Queryable,
  conversationId: string,
  userId: string,
): Promise<string | undefined> {
  const rows = await db.query<{ default_model_slug: string | null }>(
    'SELECT default_model_slug FROM conversations WHERE id = $1 AND user_id = $2',
    [conversationId, userId],
  )
  return rows[0]?.default_model_slug ?? undefined
}
