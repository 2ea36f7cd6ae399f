// Storing the send that creates a conversation, in one statement: the user (if
// new), the conversation, its user messages, its send key and the reply's in-progress row,
// which is its current node (CONTRACT §10). One round trip and no transaction:
// under load every round trip of a transaction waits for the event loop while
// its connection is held, and the many-streams benchmark ran out of
// connections on exactly that (a first send in a transaction: 2,670 of 5,000
// streams, the rest refused at the database's deadline; in one statement:
// 4,868). The statement carries its deadline in the server's clock
// (storage/statement-deadline.ts): started later - a frozen server waking up
// with it in its socket - it fails whole and stores nothing, so a send
// refused at its deadline is never stored behind its 503 (CONTRACT §19). A
// send to an existing conversation must read its tree first and keeps its
// transaction (turn/accept.ts). Runs unchanged on postgres.js and PGlite.
import { conflict } from '../../errors.ts'
import { type Queryable, sqlState, UNIQUE_VIOLATION } from '../../storage/db.ts'
import { STATEMENT_DEADLINE } from '../../storage/statement-deadline.ts'
import {
  dateOf,
  type EnabledInstructions,
  type ReplyMetadata,
  type StoredMessage,
  userMetadata,
} from '../messages.ts'
import {
  type UserInstructionsColumns,
  userInstructionsColumns,
  userInstructionsOf,
} from './user-instructions.ts'

export interface FirstSend {
  userId: string
  conversationId: string
  title: string
  /** The user messages in order, each with its parent set. */
  inputs: readonly StoredMessage[]
  reply: {
    id: string
    createTime: number
    metadata: ReplyMetadata
    /** Stored claimed by the runner holding this fencing token (it runs the turn next); else unclaimed. */
    runToken?: number
  }
}

/** The id that appears twice among the inputs, if one does. */
function repeatedId(inputs: readonly StoredMessage[]): string | undefined {
  const seen = new Set<string>()
  for (const { id } of inputs) {
    if (seen.has(id)) return id
    seen.add(id)
  }
  return undefined
}

/**
 * Stores a new conversation's first send; a message id given twice is a
 * conflict. Resolves with the reply row's seq (its place in the queue) and
 * the user's instructions, null when off (read in the same statement, so the
 * turn reads nothing more before it starts).
 */
export async function storeFirstSend(
  db: Queryable,
  send: FirstSend,
): Promise<{ replySeq: number; userInstructions: EnabledInstructions | null }> {
  const first = send.inputs[0]
  const last = send.inputs.at(-1)
  if (!first || !last) throw new Error('storeFirstSend: a send needs at least one message')
  const repeated = repeatedId(send.inputs)
  if (repeated !== undefined)
    throw conflict(`A message with id "${repeated}" is already in this conversation.`)
  // User messages, then the reply: inserted in this order, so in seq order.
  const rows = JSON.stringify([
    ...send.inputs.map((message) => ({
      id: message.id,
      parent_id: message.parentId ?? null,
      role: 'user',
      content: message.content,
      status: 'finished_successfully',
      metadata: userMetadata(message),
      at: dateOf(message.createTime),
      run_token: null,
    })),
    {
      id: send.reply.id,
      parent_id: send.reply.metadata.parent_id,
      role: 'assistant',
      content: { content_type: 'text', parts: [''] },
      status: 'in_progress',
      metadata: send.reply.metadata,
      at: dateOf(send.reply.createTime),
      run_token: send.reply.runToken ?? null,
    },
  ])
  try {
    const stored = await db.query<{ seq: number; role: string } & UserInstructionsColumns>(
      `WITH new_user AS (INSERT INTO users (id) VALUES ($1) ON CONFLICT (id) DO NOTHING),
       -- The user's instructions, for the turn (the reply row's alone).
       instructions AS (SELECT ${userInstructionsColumns('s')} FROM user_system_messages s
                         WHERE s.user_id = $1),
       conversation AS (
         INSERT INTO conversations (id, user_id, title, created_at, updated_at, current_node,
                                    default_model_slug)
         VALUES ($2, $1, $3, $4, $5, $6, $9)),
       -- The send's key (send-keys-repository.ts): a retry of this send is refused here.
       send_key AS (
         INSERT INTO send_keys (user_id, message_id, conversation_id, reply_id)
         VALUES ($1, $8, $2, $6))
       INSERT INTO messages (id, conversation_id, parent_id, role, content, status, metadata,
                             created_at, updated_at, run_token)
       SELECT m.id, $2, m.parent_id, m.role, m.content, m.status, m.metadata, m.at, m.at, m.run_token
         FROM ROWS FROM (jsonb_to_recordset($7::text::jsonb) AS (id text, parent_id text, role text,
                content jsonb, status text, metadata jsonb, at timestamptz, run_token bigint))
              WITH ORDINALITY AS m(id, parent_id, role, content, status, metadata, at, run_token, n)
        -- Fails the whole statement (every insert above with it) once started too late.
        WHERE conduit_before($10)
        ORDER BY m.n
       RETURNING seq::int AS seq, role, (SELECT about_user FROM instructions),
                 (SELECT about_model FROM instructions)`,
      [
        send.userId,
        send.conversationId,
        send.title,
        dateOf(first.createTime),
        dateOf(last.createTime),
        send.reply.id,
        rows,
        first.id,
        // The model of the first reply is the conversation's (CONTRACT §15).
        send.reply.metadata.model_slug,
        STATEMENT_DEADLINE,
      ],
    )
    const reply = stored.find((row) => row.role === 'assistant')
    if (!reply) throw new Error('storeFirstSend: the reply row was not stored')
    return { replySeq: reply.seq, userInstructions: userInstructionsOf(reply) }
  } catch (error) {
    // The send's key, when the user sent its first message id before (a
    // conversation id taken is all else: they are random UUIDs).
    if (sqlState(error) === UNIQUE_VIOLATION)
      throw conflict(`A message with id "${first.id}" was already sent.`)
    throw error
  }
}
