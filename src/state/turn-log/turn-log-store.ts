// The TurnLogStore port: the ordered, append-only items (encoded SSE frames) of
// each turn's stream, keyed by the turn's assistant message id. The turn's
// runner writes a log; every HTTP response and every resume reads it from an
// offset and follows it live, on any instance. Adapters: memory-turn-logs.ts
// (in-process, the embedded default) and redis-turn-logs.ts (Redis Streams,
// shared by every instance and durable across a process dying).

export interface TurnLogIdentity {
  /** The assistant message the turn produces; resume tokens name it. */
  messageId: string
  conversationId: string
  /** The user the turn belongs to. */
  userId: string
}

export interface TurnLogInfo extends TurnLogIdentity {
  /** Items appended (and readable) so far. */
  length: number
  /** True once finish() ran: no item will follow. */
  finished: boolean
}

/** An append or finish carried a fence lower than the log's: another writer took over. */
export class TurnLogFencedError extends Error {
  constructor(messageId: string) {
    super(`turn log ${messageId}: a newer writer holds it`)
    this.name = 'TurnLogFencedError'
  }
}

/** An append or finish named a log that does not exist (never opened, removed or expired). */
export class TurnLogMissingError extends Error {
  constructor(messageId: string) {
    super(`turn log ${messageId} does not exist`)
    this.name = 'TurnLogMissingError'
  }
}

export interface TurnLogStore {
  /** True when logs outlive this process (Redis); false for the in-process adapter. */
  readonly durable: boolean

  /**
   * Creates an unfinished log at fence 0 (a runner that takes over later
   * raises it with `claim`) holding `items` (none by default), in one step:
   * readers never see it without them. Opening an existing log throws.
   */
  open(identity: TurnLogIdentity, items?: readonly string[]): Promise<void>

  /**
   * Appends items at the end of the log, in order, as written by the holder of
   * `fence`. Resolves once the items are stored (durably, for a durable
   * adapter) and visible to readers; items are never visible before that.
   * Appends and the finish of one log from one writer are applied in call
   * order even when not awaited. Rejects with TurnLogFencedError when the
   * log's fence is higher than `fence`, TurnLogMissingError when the log does
   * not exist, and throws on a finished log.
   */
  append(messageId: string, items: readonly string[], fence: number): Promise<void>

  /**
   * Raises the log's fence to `fence`, so appends and finishes with a lower
   * fence fail from now on. Resolves with the log's info after the claim, or
   * undefined when the log does not exist; rejects with TurnLogFencedError when
   * the log's fence is already higher.
   */
  claim(messageId: string, fence: number): Promise<TurnLogInfo | undefined>

  /**
   * Marks the log finished (readers end after its last item) and keeps it for
   * the retention period from now, then it disappears. Same fence rule as append.
   */
  finish(messageId: string, fence: number): Promise<void>

  /** The log's identity, length and state; undefined when it does not exist. */
  info(messageId: string): Promise<TurnLogInfo | undefined>

  /**
   * Yields the items from `offset` on, then follows the log live; ends after the
   * last item of a finished log, when the log disappears (removed or expired),
   * or when signal aborts. An offset past the end of an unfinished log waits
   * for items to reach it. Items come in batches, in order, each batch (never
   * empty) every item readable at that moment, so a reader can pass on what
   * arrived together in one write instead of one per item.
   */
  read(messageId: string, offset: number, signal?: AbortSignal): AsyncGenerator<readonly string[]>

  /**
   * Logs opened at least `olderThanMs` ago and not finished, oldest first, at
   * most `limit`: where a writer that died after storing its reply left a
   * stream without its end (a sweep ends them). Logs removed or expired are
   * not listed.
   */
  unfinished(olderThanMs: number, limit: number): Promise<TurnLogIdentity[]>

  /** Every item of the log, oldest first (empty when it does not exist). */
  readAll(messageId: string): Promise<string[]>

  /** Deletes the log at once (a deleted conversation); readers following it end. */
  remove(messageId: string): Promise<void>

  /** Releases connections and timers; readers end. */
  close(): Promise<void>
}
