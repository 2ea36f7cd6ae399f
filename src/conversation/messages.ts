// The message shapes that travel in the v1 stream and in the context list, and
// the pure helpers that build them.
import type { Attachment, MultimodalPart } from '../files/multimodal-message.ts'

export interface TextContent {
  content_type: 'text'
  parts: string[]
}

/** A user message with attachments as chatgpt.com sends it (CONTRACT §20): text and image pointers. */
export interface MultimodalContent {
  content_type: 'multimodal_text'
  parts: MultimodalPart[]
}

/** What a user sends: text, or text with image pointers. */
export type UserContent = TextContent | MultimodalContent

/**
 * A message's content as stored: text for this service's own messages, and
 * for imported ones whatever chatgpt.com's export held (`multimodal_text`
 * parts, `code`, tool output…), shown as it was.
 */
export interface MessageContent {
  content_type: string
  /** Texts, and objects such as image asset pointers. */
  parts?: (string | Record<string, unknown>)[]
  [field: string]: unknown
}

/** The roles a stored message may have: imported conversations add system and tool messages. */
export type MessageRole = 'user' | 'assistant' | 'system' | 'tool'

/**
 * A message as the stream shows it (CONTRACT §4.2, §9); key order is the wire
 * order. The assistant message also carries the fields chatgpt.com always
 * sends (author name and metadata, weight, recipient, channel).
 */
export interface StreamMessage {
  id: string
  author: { role: 'user' | 'assistant'; name?: null; metadata?: Record<string, never> }
  create_time: number
  update_time?: number
  content: UserContent
  status: string
  end_turn: boolean | null
  weight?: number
  metadata: Record<string, unknown>
  recipient?: 'all'
  channel?: null
}

/** The id chatgpt.com clients give the top of a conversation's message tree (CONTRACT §10). */
export const ROOT_ID = 'client-created-root'

/** How a reply came to be (CONTRACT §9-§10): answering new messages, or regenerated. */
export type MessageType = 'next' | 'variant'

/** How a reply ended: its completion patch's `finish_details.type`. */
export type FinishType = 'stop' | 'interrupted' | 'error'

/**
 * A turn: the reply to a send, from its acceptance to its end - what a runner
 * needs to run (or finish) it. Its row is the queue's entry (sql/turn-repository.ts).
 */
export interface Turn {
  messageId: string
  conversationId: string
  userId: string
  seq: number
  /** Unix seconds with a fraction, as streamed in the assistant message. */
  createTime: number
  metadata: ReplyMetadata
  /** Fencing token of the runner that claimed it; null while it has never run. */
  runToken: number | null
  /**
   * The instructions its conversation keeps (an import's: migration 009), in
   * place of the user's current ones; null for the user's current ones.
   */
  conversationInstructions: string | null
  /**
   * The user's custom instructions (CONTRACT §16), read by the statement
   * that stored or claimed the turn; null when they are off or unset.
   */
  userInstructions: EnabledInstructions | null
}

/** A user's custom instructions while enabled (CONTRACT §16). */
export interface EnabledInstructions {
  aboutUser: string
  aboutModel: string
}

/** Stored with the reply: what it was produced with and how it ended. */
export interface ReplyMetadata {
  model_slug: string
  /** The user message the reply answers (also its parent in the tree). */
  parent_id: string
  /** Absent on replies stored before branches: `next`. */
  message_type?: MessageType
  temperature?: number
  /** OpenAI's reasoning effort the send asked for (model/reasoning-effort.ts). */
  reasoning_effort?: string
  /** The turn that created the conversation: it streams the title (CONTRACT §11). */
  first_turn?: true
  finish_details?: { type: FinishType }
}

/** A message as stored and as kept in the context list. */
export interface StoredMessage {
  id: string
  role: 'user' | 'assistant'
  content: UserContent
  /** The files a user message names (its `metadata.attachments`, CONTRACT §20); absent when none. */
  attachments?: Attachment[]
  /** Unix seconds with a fraction. */
  createTime: number
  /** The message this one follows in the tree (null at the top); unknown for context entries. */
  parentId?: string | null
}

/**
 * The time `step` steps after `start` (Unix seconds), for the messages of one
 * turn or an imported message the export left undated: whole milliseconds
 * after the millisecond `start` is stored as, plus a quarter of one, so that
 * each stays later than the one before once the database rounds it to the
 * millisecond, as a reply must be later than what it answers (CONTRACT §17).
 * (Adding 0.001 a step does not: a start near half a millisecond can round two
 * steps to the same one.)
 */
export function turnStepTime(start: number, step: number): number {
  return (Math.round(start * 1000) + step + 0.25) / 1000
}

/** Unix seconds with a sub-millisecond fraction, as `create_time` wants. */
export function unixSeconds(): number {
  const seconds = (performance.timeOrigin + performance.now()) / 1000
  // A whole number would serialize without a fraction; clients parse it as a float.
  return Number.isInteger(seconds) ? seconds + 0.000001 : seconds
}

/** The Date of Unix seconds, to the millisecond (as timestamptz stores it). */
export const dateOf = (seconds: number) => new Date(Math.round(seconds * 1000))

/** Stored content with its keys in wire order: jsonb does not keep key order. */
export const orderedContent = <T extends UserContent>(stored: T): T =>
  ({ content_type: stored.content_type, parts: stored.parts }) as T

/** The metadata a stored user message keeps: its attachments, as chatgpt.com lists them. */
export const userMetadata = (message: Pick<StoredMessage, 'attachments'>) =>
  message.attachments && message.attachments.length > 0 ? { attachments: message.attachments } : {}

/** The attachments of stored metadata, when it lists any. */
export function attachmentsOf(metadata: unknown): Attachment[] | undefined {
  const listed = (metadata as { attachments?: unknown } | null | undefined)?.attachments
  return Array.isArray(listed) && listed.length > 0 ? (listed as Attachment[]) : undefined
}

/** Any stored content with `content_type` first, then `parts`, then the rest as stored. */
export const wireContent = ({ content_type, parts, ...rest }: MessageContent): MessageContent =>
  parts === undefined ? { content_type, ...rest } : { content_type, parts, ...rest }

/** The text of a message: its text parts joined by newlines (image pointers are not text). */
export function textOf(content: { parts?: readonly unknown[] }): string {
  return (content.parts ?? []).filter((part) => typeof part === 'string').join('\n')
}

export function userStreamMessage(message: StoredMessage): StreamMessage {
  return {
    id: message.id,
    author: { role: 'user' },
    create_time: message.createTime,
    content: message.content,
    status: 'finished_successfully',
    end_turn: null,
    metadata: userMetadata(message),
  }
}

export interface AssistantStart {
  id: string
  createTime: number
  modelSlug: string
  /** The user message the reply answers. */
  parentId: string
  messageType: MessageType
}

export function assistantStartMessage(reply: AssistantStart): StreamMessage {
  return {
    id: reply.id,
    author: { role: 'assistant', name: null, metadata: {} },
    create_time: reply.createTime,
    update_time: reply.createTime,
    content: { content_type: 'text', parts: [''] },
    status: 'in_progress',
    end_turn: null,
    // JSON has one number type: chatgpt.com's 1.0 is sent as 1.
    weight: 1,
    metadata: {
      model_slug: reply.modelSlug,
      parent_id: reply.parentId,
      message_type: reply.messageType,
    },
    recipient: 'all',
    channel: null,
  }
}

/** A conversation title from its first message: one line, at most 80 characters. */
export function titleFrom(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim()
  const chars = Array.from(line)
  return chars.length <= 80 ? line : `${chars.slice(0, 79).join('').trimEnd()}…`
}
