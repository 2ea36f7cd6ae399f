// Ending a turn, the same way whoever ends it (its runner, or the new owner of
// a dead runner's turn): store the reply under the claim's fencing token, drop
// the cached reads, bring the context list up to date, then end the stream (the
// title of a new conversation when it did not stream yet, an error item when
// there is one, the completion patch, message_stream_complete, [DONE]) and
// finish the log. A client that saw [DONE] reads the new state.
//
// When the database cannot be reached for the final write, the reply is not
// lost: the stream still ends as the reply did, the row stays `in_progress`
// under this runner's token, and the runner's sweep finishes it from the log
// once the database answers (recover.ts), exactly as streamed. The log keeps
// it for the resume retention (RESUME_RETENTION_MS); past that the sweep falls
// back to the row's last checkpoint.
import { TurnLogFencedError, type TurnLogStore } from '../../state/turn-log/turn-log-store.ts'
import { isDatabaseUnavailable } from '../../storage/db.ts'
import type { Turn } from '../messages.ts'
import { forgetContext, recordReply } from '../reads/context.ts'
import { finishReply, type ReplySteps } from '../sql/turn-repository.ts'
import {
  completionItem,
  doneItem,
  errorItem,
  type FinishType,
  frameOf,
  type StreamErrorCode,
  type StreamItem,
  streamCompleteItem,
  titleGenerationItem,
} from '../stream/encoding.ts'
import { GAVE_UP, withinGraceOfAbort } from './abort-grace.ts'
import { invalidateReads, type TurnDeps } from './deps.ts'
import { isTurnLogFault } from './log-restore.ts'
import type { TurnReport } from './observer.ts'
import { type EndingTitle, storedEndingTitle } from './title.ts'

/**
 * The turn's messages besides the reply (CONTRACT §21): stored with it, in
 * the tree between what it answers and the reply; `leadFrames` make the
 * reply the streamed message again before its completion patch.
 */
export interface TurnSteps extends ReplySteps {
  leadFrames: readonly string[]
}

export interface TurnEnding {
  text: string
  finish: FinishType
  error?: { code: StreamErrorCode; detail: string }
  /** False when there is no log left to end (in-process logs after a restart). */
  hasLog: boolean
  /**
   * True when the runner kept the context list in step with the turn, so the
   * stored reply is pushed to it; false drops the list (a dead runner may have
   * left it half updated) and the next turn rebuilds it.
   */
  contextInStep: boolean
  /**
   * The runner's way to write back a log the turn state lost (reply-log.ts):
   * when the stream's last items find the store failed, the log is restored
   * and they are written again, so readers get the real ending.
   */
  restoreLog?: () => Promise<boolean>
  /** Told once the reply is stored (a shutdown reports the turns it could not wait for). */
  progress?: { stored: boolean }
  /** Thoughts, tool calls and results streamed before the reply's text; none when absent. */
  steps?: TurnSteps
  /** What the runner measured while streaming, for the turn's log line and metrics. */
  stats?: Pick<TurnReport, 'items' | 'durationMs' | 'modelFirstChunkMs' | 'firstItemMs'>
  /** A first turn's title as its runner named the conversation (title.ts); absent: the stored title. */
  title?: EndingTitle
  /** The log already holds the title item (a dead runner streamed it). */
  titleStreamed?: boolean
}

/**
 * How ending went: `lost` when the claim was lost (a newer owner ends the turn
 * instead, nothing was written); `deferred` when the database was unavailable
 * (the sweep stores the reply later); else whether the reply could be stored.
 * The stream is over in every case.
 */
export type FinishOutcome = 'lost' | 'stored' | 'deferred' | 'not_stored'

/** Whether the turn is done with; false leaves it to a newer owner or to the sweep. */
export const turnIsOver = (outcome: FinishOutcome) =>
  outcome === 'stored' || outcome === 'not_stored'

/** Stores and streams the end of a turn. */
export async function finishTurn(
  deps: TurnDeps,
  turn: Turn,
  token: number,
  ending: TurnEnding,
): Promise<FinishOutcome> {
  let { finish, error } = ending
  let outcome: FinishOutcome = 'stored'
  let storedTitle: string | undefined
  // A title model still at work gets its short wait while the reply is stored.
  const namedTitle = ending.title?.(finish)
  try {
    const storing = finishReply(deps.db, turn, token, {
      text: ending.text,
      finish,
      ...(ending.steps?.records.length ? { steps: ending.steps } : {}),
    })
    const saved = deps.shutdown
      ? await withinGraceOfAbort(storing, deps.shutdown, STORE_AT_SHUTDOWN_MS)
      : await storing
    if (saved === GAVE_UP) {
      deps.warn('shutdown: the reply is left for a takeover; its stream ends now', undefined)
      outcome = 'deferred'
    } else if (!saved) return 'lost'
    else storedTitle = saved.title
  } catch (cause) {
    if (isDatabaseUnavailable(cause)) {
      deps.warn('database unavailable; the reply is kept and stored when it answers', cause)
      outcome = 'deferred'
    } else {
      deps.warn('could not store the reply', cause)
      error ??= { code: 'storage_error', detail: 'The reply could not be saved.' }
      finish = 'error'
      outcome = 'not_stored'
    }
  }
  if (outcome === 'stored' && ending.progress) ending.progress.stored = true
  // Different keys, so the cached reads are dropped and the context list
  // updated in one round trip.
  await Promise.all([
    outcome === 'stored' && invalidateReads(deps, turn.conversationId, turn.userId),
    outcome === 'stored' && ending.contextInStep
      ? recordReply(deps, turn.conversationId, {
          id: turn.messageId,
          role: 'assistant',
          content: { content_type: 'text', parts: [ending.text] },
          createTime: turn.createTime,
        })
      : forgetContext(deps, turn.conversationId),
  ])
  deps.observer.turnFinished(turn, {
    finish,
    ...(error ? { error } : {}),
    stored: outcome === 'stored',
    ...ending.stats,
  })
  if (!ending.hasLog) return outcome
  // With the database gone (or the process stopping) the stream ends without more waiting.
  const title =
    outcome === 'deferred'
      ? undefined
      : namedTitle
        ? await namedTitle
        : storedEndingTitle(turn, storedTitle, ending.titleStreamed === true)
  const leadFrames = ending.steps?.leadFrames ?? []
  await endStreamOnce(deps, turn, token, { finish, error, title, leadFrames }, ending.restoreLog)
  return outcome
}

/**
 * How long a reply's store may still take once the shutdown stops the turns:
 * a healthy database answers well within it; past it the stream ends anyway
 * (STOP_TURNS_MS gives the turns a second in all). The statement may still
 * land (under this runner's token, as the reply streamed); if not, a
 * takeover stores it from the log.
 */
const STORE_AT_SHUTDOWN_MS = 300

/** Ends the stream; after a store fault, once more on the restored log. Never throws. */
async function endStreamOnce(
  deps: TurnDeps,
  turn: Turn,
  token: number,
  streamEnding: StreamEnding,
  restoreLog: (() => Promise<boolean>) | undefined,
): Promise<void> {
  try {
    await endStream(deps.logs, turn, token, streamEnding)
    return
  } catch (cause) {
    if (cause instanceof TurnLogFencedError) return
    if (!restoreLog || !isTurnLogFault(cause)) {
      deps.warn('could not end the turn log', cause)
      return
    }
    deps.warn('the turn state failed as the stream ended; the log is written back', cause)
  }
  const restored = await restoreLog().catch(() => false)
  if (!restored) {
    deps.warn('could not end the turn log: the turn state did not answer in time', undefined)
    return
  }
  await endStream(deps.logs, turn, token, streamEnding).catch((cause: unknown) => {
    if (!(cause instanceof TurnLogFencedError)) deps.warn('could not end the turn log', cause)
  })
}

/** What a stream's last items say: how the reply ended, why it failed, the first turn's title. */
export interface StreamEnding {
  finish: FinishType
  error?: { code: StreamErrorCode; detail: string }
  title?: string
  /** Frames that go first: those making the reply the streamed message again (TurnSteps). */
  leadFrames?: readonly string[]
}

/**
 * Appends a turn's last items (the title when there is one, an error item when
 * there is one, the completion patch, message_stream_complete, [DONE]) and
 * finishes its log, as the holder of `token`. The title comes first: gpt4free
 * stops reading at the completion patch.
 */
export async function endStream(
  logs: TurnLogStore,
  turn: { conversationId: string; messageId: string },
  token: number,
  { finish, error, title, leadFrames = [] }: StreamEnding,
): Promise<void> {
  const items: StreamItem[] = [
    ...(title === undefined ? [] : [titleGenerationItem(title, turn.conversationId)]),
    ...(error ? [errorItem(turn.conversationId, turn.messageId, error.detail, error.code)] : []),
    completionItem(finish),
    streamCompleteItem(turn.conversationId),
    doneItem(),
  ]
  // Applied in call order (TurnLogStore), so both leave in one batch.
  await Promise.all([
    logs.append(turn.messageId, [...leadFrames, ...items.map(frameOf)], token),
    logs.finish(turn.messageId, token),
  ])
}
