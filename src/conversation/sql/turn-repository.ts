// SQL for the life of a turn (CONTRACT §12-§13): the reply is an `in_progress`
// row from the moment its send is accepted; the in-progress rows of a
// conversation, in seq order, are its queue; a runner claims a row with its
// lease's fencing token and writes the reply only while the row holds it.
import type { Queryable } from '../../storage/db.ts'
import {
  attachmentsOf,
  type FinishType,
  orderedContent,
  type ReplyMetadata,
  type StoredMessage,
  type TextContent,
  type Turn,
  type UserContent,
} from '../messages.ts'
import { statusOf } from '../stream/encoding.ts'
import type { StepRecord } from '../stream/reply-items.ts'
import type { MessageWire } from './tree-repository.ts'
import {
  type UserInstructionsColumns,
  userInstructionsColumns,
  userInstructionsOf,
} from './user-instructions.ts'

const toDate = (seconds: number) => new Date(Math.round(seconds * 1000))

/**
 * Stores the in-progress reply row of a turn being accepted, as a child of the
 * message it answers, and makes it the conversation's current node (CONTRACT
 * §10): a send accepted after it follows it by default. With `runToken` (the
 * accepting process holds the conversation's lease) the row is stored claimed
 * by it when no other turn of the conversation is unfinished, so that it runs
 * at once; else it queues unclaimed. With `conversationModel` (a send that
 * named its model) that becomes the conversation's model (CONTRACT §15).
 * Run inside the transaction that locks the conversation, so concurrent
 * accepts see each other's rows.
 */
export async function insertReplyPlaceholder(
  tx: Queryable,
  conversationId: string,
  reply: { id: string; createTime: number; metadata: ReplyMetadata; runToken?: number },
  conversationModel?: string,
): Promise<{ seq: number; claimed: boolean }> {
  const rows = await tx.query<{ seq: number; claimed: boolean }>(
    `WITH reply AS (
       INSERT INTO messages (id, conversation_id, parent_id, role, content, status, metadata,
                             created_at, updated_at, run_token)
       VALUES ($1, $2, $3, 'assistant', '{"content_type":"text","parts":[""]}', 'in_progress',
               $4::text::jsonb, $5, $5,
               CASE WHEN NOT EXISTS (SELECT 1 FROM messages
                                      WHERE conversation_id = $2 AND status = 'in_progress')
                    THEN $6::bigint END)
       RETURNING id, seq::int AS seq, run_token IS NOT NULL AS claimed)
     UPDATE conversations
        SET current_node = reply.id,
            default_model_slug = COALESCE($7::text, conversations.default_model_slug)
       FROM reply WHERE conversations.id = $2
     RETURNING reply.seq, reply.claimed`,
    [
      reply.id,
      conversationId,
      reply.metadata.parent_id,
      JSON.stringify(reply.metadata),
      toDate(reply.createTime),
      reply.runToken ?? null,
      conversationModel ?? null,
    ],
  )
  const row = rows[0]
  if (!row) throw new Error('insertReplyPlaceholder: the conversation is gone')
  return row
}

type TurnRow = UserInstructionsColumns & {
  id: string
  conversation_id: string
  user_id: string
  seq: number
  created_at: Date
  metadata: ReplyMetadata
  run_token: string | null
  instructions: string | null
}

/** A turn's columns, from its reply `m`, its conversation `c` and its user's instructions `s`. */
const TURN_COLUMNS = `m.id, m.conversation_id, c.user_id, m.seq::int AS seq, m.created_at, m.metadata,
  m.run_token::text AS run_token, c.instructions, ${userInstructionsColumns('s')}`
/** Joins a turn's user's instructions as `s` (TURN_COLUMNS), to a statement joining its conversation as `c`. */
const WITH_INSTRUCTIONS = 'LEFT JOIN user_system_messages s ON s.user_id = c.user_id'

const toTurn = (row: TurnRow): Turn => ({
  messageId: row.id,
  conversationId: row.conversation_id,
  userId: row.user_id,
  seq: row.seq,
  createTime: row.created_at.getTime() / 1000,
  metadata: row.metadata,
  runToken: row.run_token === null ? null : Number(row.run_token),
  conversationInstructions: row.instructions,
  userInstructions: userInstructionsOf(row),
})

/** The conversation's oldest unfinished turn: the one to run next (or running). */
export async function nextTurn(db: Queryable, conversationId: string) {
  const rows = await db.query<TurnRow>(
    `SELECT ${TURN_COLUMNS} FROM messages m JOIN conversations c ON c.id = m.conversation_id
            ${WITH_INSTRUCTIONS}
      WHERE m.conversation_id = $1 AND m.status = 'in_progress' ORDER BY m.seq LIMIT 1`,
    [conversationId],
  )
  return rows[0] ? toTurn(rows[0]) : undefined
}

/** The turn a runner is running now (claimed and unfinished), if any. */
export async function runningTurn(db: Queryable, conversationId: string) {
  const rows = await db.query<TurnRow>(
    `SELECT ${TURN_COLUMNS} FROM messages m JOIN conversations c ON c.id = m.conversation_id
            ${WITH_INSTRUCTIONS}
      WHERE m.conversation_id = $1 AND m.status = 'in_progress' AND m.run_token IS NOT NULL
      ORDER BY m.seq LIMIT 1`,
    [conversationId],
  )
  return rows[0] ? toTurn(rows[0]) : undefined
}

/** Every conversation with a turn unfinished for olderThanMs: what a sweep checks for dead runners. */
export async function conversationsWithTurns(
  db: Queryable,
  olderThanMs: number,
): Promise<string[]> {
  const rows = await db.query<{ conversation_id: string }>(
    `SELECT DISTINCT conversation_id FROM messages
      WHERE status = 'in_progress' AND created_at < now() - $1 * interval '1 millisecond'`,
    [olderThanMs],
  )
  return rows.map((row) => row.conversation_id)
}

/** How a stored reply stands, for ending a stream its runner left open. */
export interface StoredEnding {
  /** `in_progress` while a runner (or the recovery of a dead one) still owes the reply. */
  status: string
  /** How it ended, once it did. */
  finish: FinishType | undefined
  /** The reply of the conversation's first turn: its stream carries the title. */
  firstTurn: boolean
  /** The conversation's title as stored now. */
  title: string
}

/** The stored state of each of these replies, by `conversationId/messageId`; absent when not stored. */
export async function storedEndings(
  db: Queryable,
  replies: readonly { conversationId: string; messageId: string }[],
): Promise<Map<string, StoredEnding>> {
  const rows = await db.query<{
    conversation_id: string
    id: string
    status: string
    finish: FinishType | null
    first_turn: boolean
    title: string
  }>(
    `SELECT m.conversation_id, m.id, m.status, m.metadata->'finish_details'->>'type' AS finish,
            COALESCE(m.metadata->>'first_turn' = 'true', false) AS first_turn, c.title
       FROM messages m JOIN conversations c ON c.id = m.conversation_id
      WHERE (m.conversation_id, m.id) IN (SELECT * FROM unnest($1::uuid[], $2::text[]))`,
    [replies.map((reply) => reply.conversationId), replies.map((reply) => reply.messageId)],
  )
  return new Map(
    rows.map((row) => [
      `${row.conversation_id}/${row.id}`,
      {
        status: row.status,
        finish: row.finish ?? undefined,
        firstTurn: row.first_turn,
        title: row.title,
      },
    ]),
  )
}

/** A reply as stored, for a reader whose log is gone: its text and how it ended (undefined while in progress). */
export interface StoredReply {
  text: string
  finish: FinishType | undefined
}

/** The stored reply `messageId` of a conversation; undefined when there is none. */
export async function storedReply(
  db: Queryable,
  conversationId: string,
  messageId: string,
): Promise<StoredReply | undefined> {
  const rows = await db.query<{ status: string; content: TextContent; finish: FinishType | null }>(
    `SELECT status, content, metadata->'finish_details'->>'type' AS finish
       FROM messages WHERE conversation_id = $1 AND id = $2`,
    [conversationId, messageId],
  )
  const row = rows[0]
  if (!row) return undefined
  return {
    text: (row.content.parts ?? []).join(''),
    finish: row.status === 'in_progress' ? undefined : (row.finish ?? 'stop'),
  }
}

/** What claiming a conversation's next turn found. */
export interface NextTurn {
  /** The conversation's oldest unfinished turn. */
  turn: Turn
  /** Set when this claim took it; undefined when it is claimed under a newer token. */
  claim?: TurnClaim
  /** Whether unfinished turns follow it in the queue. */
  more: boolean
}

export interface TurnClaim {
  /** The token of an earlier claim (a runner that died or lost its lease); null when it never ran. */
  previousToken: number | null
  /** The reply as last stored (a checkpoint). */
  content: TextContent
  /** The frames of its steps as last checkpointed (in-process logs only: reply-checkpoints.ts); null when none were. */
  checkpointSteps: string[] | null
  stopRequested: boolean
}

/**
 * Claims the conversation's oldest unfinished turn for the holder of `token`,
 * in one statement (finding, locking and claiming it, and seeing whether more
 * follow); undefined when no turn is unfinished. A turn an earlier runner
 * claimed is taken only when its row has not been touched for `staleMs`: its
 * runner checkpoints it every tick while it lives (reply-checkpoints.ts), so a
 * live runner whose lease the turn state lost keeps its turn.
 */
export async function claimNextTurn(
  db: Queryable,
  conversationId: string,
  token: number,
  staleMs: number,
): Promise<NextTurn | undefined> {
  const rows = await db.query<
    TurnRow & {
      previous: string | null
      content: TextContent
      checkpoint_steps: string[] | null
      stop_requested: boolean
      claimed: boolean
      more: boolean
    }
  >(
    `WITH next AS (
       SELECT seq, run_token, updated_at FROM messages
        WHERE conversation_id = $1 AND status = 'in_progress' ORDER BY seq LIMIT 1 FOR UPDATE),
     claimed AS (
       UPDATE messages m SET run_token = $2, updated_at = GREATEST(now(), m.created_at) FROM next
        WHERE m.seq = next.seq
          AND (next.run_token IS NULL
               OR (next.run_token < $2 AND next.updated_at < now() - $3 * interval '1 millisecond'))
        RETURNING m.seq)
     SELECT ${TURN_COLUMNS}, m.run_token::text AS previous, m.content, m.checkpoint_steps,
            m.stop_requested,
            EXISTS (SELECT 1 FROM claimed) AS claimed,
            EXISTS (SELECT 1 FROM messages later
                     WHERE later.conversation_id = $1 AND later.status = 'in_progress'
                       AND later.seq > next.seq) AS more
       FROM next JOIN messages m ON m.seq = next.seq JOIN conversations c ON c.id = m.conversation_id
            ${WITH_INSTRUCTIONS}`,
    [conversationId, token, staleMs],
  )
  const row = rows[0]
  if (!row) return undefined
  // The row as it was before the claim (a statement does not see its own update).
  const turn = toTurn(row)
  if (!row.claimed) return { turn, more: row.more }
  return {
    turn: { ...turn, runToken: token },
    claim: {
      previousToken: row.previous === null ? null : Number(row.previous),
      content: row.content,
      checkpointSteps: row.checkpoint_steps,
      stopRequested: row.stop_requested,
    },
    more: row.more,
  }
}

/**
 * Records a stop for an unfinished turn, so that a runner claiming it later
 * ends it at once; false when the turn is no longer unfinished.
 */
export async function requestStop(db: Queryable, turn: Turn): Promise<boolean> {
  const rows = await db.query(
    `UPDATE messages SET stop_requested = true
      WHERE conversation_id = $1 AND id = $2 AND status = 'in_progress' RETURNING 1`,
    [turn.conversationId, turn.messageId],
  )
  return rows.length === 1
}

/** A running reply, under the fencing token of the runner that writes it, with its text so far. */
export interface ReplyCheckpoint {
  conversationId: string
  messageId: string
  token: number
  /** Absent: the row is only touched (the runner's heartbeat), its content kept. */
  text?: string
  /** The frames of its steps (thoughts, tool calls, results) from `stepsFrom` on, saved with the text; absent: kept. */
  steps?: readonly string[]
  /**
   * How many frames the row holds already, which `steps` follow: 0 (or
   * absent) replaces them, more appends - a long reasoning sends each frame
   * once, not all of them at every tick.
   */
  stepsFrom?: number
}

/**
 * Touches several running replies in one statement (reply checkpoints),
 * saving the text of those that carry one and appending their new step
 * frames; a reply no longer in progress under that token is left as it is.
 */
export async function checkpointReplies(
  db: Queryable,
  checkpoints: readonly ReplyCheckpoint[],
): Promise<void> {
  await db.query(
    `UPDATE messages m SET content = COALESCE(c.content, m.content),
            checkpoint_steps = CASE
              WHEN c.steps IS NULL THEN m.checkpoint_steps
              WHEN c.steps_from > 0 THEN COALESCE(m.checkpoint_steps, '[]'::jsonb) || c.steps
              ELSE c.steps END,
            updated_at = GREATEST(now(), m.created_at)
       FROM jsonb_to_recordset($1::text::jsonb)
            AS c(conversation_id uuid, id text, token bigint, content jsonb, steps jsonb, steps_from int)
      WHERE m.conversation_id = c.conversation_id AND m.id = c.id
        AND m.run_token = c.token AND m.status = 'in_progress'`,
    [
      JSON.stringify(
        checkpoints.map((checkpoint) => ({
          conversation_id: checkpoint.conversationId,
          id: checkpoint.messageId,
          token: checkpoint.token,
          content: checkpoint.text === undefined ? null : textContent(checkpoint.text),
          steps:
            checkpoint.steps === undefined || checkpoint.steps.length === 0
              ? null
              : checkpoint.steps,
          steps_from: checkpoint.stepsFrom ?? 0,
        })),
      ),
    ],
  )
}

/**
 * Stores the finished reply and bumps the conversation's update time, in one
 * statement that also reads the conversation's title (what a first turn
 * streams); undefined when the claim was lost (another runner finishes it).
 * With `steps` (CONTRACT §21: thoughts, tool calls, their results) those are
 * stored in the same statement, as hidden messages (never in a model's
 * context) shown as streamed, and the reply moves under the last of them, at
 * the time it was last streamed with.
 */
export async function finishReply(
  db: Queryable,
  turn: Turn,
  token: number,
  reply: { text: string; finish: FinishType; steps?: ReplySteps },
): Promise<{ title: string } | undefined> {
  const steps = reply.steps
  const moved = steps && {
    parentId: steps.reply.parentId,
    createdAt: toDate(steps.reply.createTime),
  }
  const rows = await db.query<{ title: string }>(
    `WITH done AS (
       UPDATE messages SET content = $4::text::jsonb, status = $5,
              metadata = metadata || $6::text::jsonb,
              parent_id = COALESCE($7::text, parent_id),
              created_at = COALESCE($8::timestamptz, created_at),
              -- A reply's times step past its send's (turnStepTime): never updated before it was created.
              updated_at = GREATEST(now(), COALESCE($8::timestamptz, created_at))
        WHERE conversation_id = $1 AND id = $2 AND run_token = $3 AND status = 'in_progress'
        RETURNING conversation_id, updated_at),
     steps AS (
       INSERT INTO messages (id, conversation_id, parent_id, role, content, status, metadata,
                             created_at, updated_at, wire, hidden)
         SELECT s.id, done.conversation_id, s.parent_id, s.role, s.content, s.status, s.metadata,
                s.created_at, s.created_at, s.wire, true
           FROM done, jsonb_to_recordset($9::text::jsonb) AS s(id text, parent_id text, role text,
                  content jsonb, status text, metadata jsonb, created_at timestamptz, wire jsonb))
     UPDATE conversations c SET updated_at = GREATEST(c.updated_at, done.updated_at)
       FROM done WHERE c.id = done.conversation_id RETURNING c.title`,
    [
      turn.conversationId,
      turn.messageId,
      token,
      JSON.stringify(textContent(reply.text)),
      statusOf(reply.finish),
      JSON.stringify({
        finish_details: { type: reply.finish },
        ...(moved ? { parent_id: moved.parentId } : {}),
      }),
      moved?.parentId ?? null,
      moved?.createdAt ?? null,
      JSON.stringify(steps ? steps.records.map(stepRow) : []),
    ],
  )
  return rows[0]
}

/** A turn's messages besides its reply, and where the reply moves (CONTRACT §21). */
export interface ReplySteps {
  records: readonly StepRecord[]
  /** The reply's parent and create time as last streamed. */
  reply: { parentId: string; createTime: number }
}

/** A step as the messages table keeps it: chatgpt.com's own fields in `wire`. */
function stepRow(step: StepRecord) {
  const wire: MessageWire = {
    author_name: step.authorName,
    author_metadata: {},
    end_turn: step.endTurn,
    weight: 1,
    recipient: step.recipient,
    channel: step.channel,
  }
  return {
    id: step.id,
    parent_id: step.parentId,
    role: step.role,
    content: step.content,
    // A thought still open when the turn ended is stored as it stopped.
    status: step.status === 'in_progress' ? 'finished_successfully' : step.status,
    metadata: step.metadata,
    created_at: toDate(step.createTime).toISOString(),
    wire,
  }
}

/**
 * The user messages a turn stored: those stored with it, just before its
 * reply; none for a regenerated reply (it answers a message stored earlier).
 */
export async function turnInputs(db: Queryable, turn: Turn): Promise<StoredMessage[]> {
  if (turn.metadata.message_type === 'variant') return []
  const rows = await db.query<{
    id: string
    parent_id: string | null
    content: UserContent
    metadata: Record<string, unknown>
    created_at: Date
  }>(
    `SELECT id, parent_id, content, metadata, created_at FROM messages
      WHERE conversation_id = $1 AND role = 'user' AND seq < $2
        AND seq > COALESCE((SELECT max(seq) FROM messages
                             WHERE conversation_id = $1 AND role = 'assistant' AND NOT hidden
                               AND seq < $2), 0)
      ORDER BY seq`,
    [turn.conversationId, turn.seq],
  )
  return rows.map((row) => {
    const attachments = attachmentsOf(row.metadata)
    return {
      id: row.id,
      role: 'user',
      content: orderedContent(row.content),
      ...(attachments ? { attachments } : {}),
      createTime: row.created_at.getTime() / 1000,
      parentId: row.parent_id,
    }
  })
}

function textContent(text: string | string[]): TextContent {
  return { content_type: 'text', parts: typeof text === 'string' ? [text] : text }
}

/**
 * Records a stop for every unfinished turn of the user's conversation (or of
 * all the user's conversations when `conversationId` is undefined), before
 * they are deleted; returns those turns.
 */
export async function requestStopAll(
  db: Queryable,
  userId: string,
  conversationId: string | undefined,
): Promise<{ conversationId: string; messageId: string }[]> {
  const rows = await db.query<{ conversation_id: string; id: string }>(
    `UPDATE messages m SET stop_requested = true FROM conversations c
      WHERE c.id = m.conversation_id AND c.user_id = $1 AND ($2::uuid IS NULL OR c.id = $2::uuid)
        AND m.status = 'in_progress'
      RETURNING m.conversation_id, m.id`,
    [userId, conversationId ?? null],
  )
  return rows.map((row) => ({ conversationId: row.conversation_id, messageId: row.id }))
}
