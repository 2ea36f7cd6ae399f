// SQL for the messages table: storing a send's messages (reading them as a
// tree is tree-repository.ts). Plain parameterized SQL that
// runs unchanged on postgres.js and PGlite.
import { conflict } from '../../errors.ts'
import { allInOrder, type Queryable, sqlState, UNIQUE_VIOLATION } from '../../storage/db.ts'
import { dateOf, type StoredMessage, userMetadata } from '../messages.ts'

/**
 * Stores messages in order, each under its `parentId`, and bumps the
 * conversation; a repeated id is a `conflict`.
 */
export async function insertMessages(
  tx: Queryable,
  conversationId: string,
  messages: readonly StoredMessage[],
  status: string,
): Promise<void> {
  // Sent together, each before the next (one round trip, run in this order).
  const inserts = messages.map((message) =>
    tx
      .query(
        `INSERT INTO messages (id, conversation_id, parent_id, role, content, status, metadata,
                               created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5::text::jsonb, $6, $8::text::jsonb, $7, $7)`,
        [
          message.id,
          conversationId,
          message.parentId ?? null,
          message.role,
          JSON.stringify(message.content),
          status,
          dateOf(message.createTime),
          // A user message keeps its attachments as chatgpt.com lists them (CONTRACT §20).
          JSON.stringify(userMetadata(message)),
        ],
      )
      .catch((error: unknown) => {
        if (sqlState(error) === UNIQUE_VIOLATION)
          throw conflict(`A message with id "${message.id}" is already in this conversation.`)
        throw error
      }),
  )
  const last = messages.at(-1)
  const touched =
    last &&
    tx.query('UPDATE conversations SET updated_at = $2 WHERE id = $1', [
      conversationId,
      dateOf(last.createTime),
    ])
  await allInOrder([...inserts, touched])
}
