// What the conversation domain reports as it works, for logs and metrics:
// turns starting and ending (with their outcome, items and model latency) and
// event streams opening, carrying items and closing. The service takes one as
// a parameter; observability/conversation-observer.ts writes it to the logger
// and the metrics. Never given message text.
import type { FinishType, StreamErrorCode } from '../stream/encoding.ts'

export interface TurnRef {
  conversationId: string
  messageId: string
  userId: string
  /** The request id of the send that started the turn, when this process accepted it (request-ids.ts). */
  requestId?: string
}

/** How a turn ended, as its log line and the metrics tell it. */
export interface TurnReport {
  finish: FinishType
  /** Present when the turn ended in an error (the model's, storage, a dead runner). */
  error?: { code: StreamErrorCode; detail: string }
  /** Whether the reply was stored. */
  stored: boolean
  /** Reply text items streamed by this runner (absent for a turn it only finished). */
  items?: number
  /** From the runner starting the turn to its end. */
  durationMs?: number
  /** The model's latency to its first chunk, when one came. */
  modelFirstChunkMs?: number
  /** From accepting the send to the first item of reply text (queue wait included). */
  firstItemMs?: number
}

export interface ConversationObserver {
  turnStarted(turn: TurnRef): void
  turnFinished(turn: TurnRef, report: TurnReport): void
  streamOpened(): void
  /** `count` items were read from a turn's log for a stream. */
  streamItems(count: number): void
  streamClosed(): void
}

export const silentObserver: ConversationObserver = {
  turnStarted() {},
  turnFinished() {},
  streamOpened() {},
  streamItems() {},
  streamClosed() {},
}
