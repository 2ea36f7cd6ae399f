// SQL for the message_feedback table (CONTRACT §11): one rating per user and
// reply, replaced by a new one.
import type { Queryable } from '../../storage/db.ts'

export type Rating = 'thumbsUp' | 'thumbsDown'

export interface Feedback {
  userId: string
  conversationId: string
  messageId: string
  rating: Rating
  text: string | undefined
}

/**
 * Stores or replaces the user's rating of a reply in their conversation;
 * false when there is no such reply in a conversation of the user's.
 */
export async function rateReply(db: Queryable, feedback: Feedback): Promise<boolean> {
  const rows = await db.query(
    `INSERT INTO message_feedback (user_id, conversation_id, message_id, rating, text)
     SELECT c.user_id, m.conversation_id, m.id, $4, $5
       FROM messages m JOIN conversations c ON c.id = m.conversation_id
      WHERE m.conversation_id = $2 AND m.id = $3 AND m.role = 'assistant' AND c.user_id = $1
     ON CONFLICT (conversation_id, message_id, user_id)
       DO UPDATE SET rating = EXCLUDED.rating, text = EXCLUDED.text, updated_at = now()
     RETURNING 1`,
    [
      feedback.userId,
      feedback.conversationId,
      feedback.messageId,
      feedback.rating,
      feedback.text ?? null,
    ],
  )
  return rows.length === 1
}
