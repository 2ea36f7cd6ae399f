// The life of one turn on the runner that claimed it (runner.ts claims it
// under the conversation's lease; accept.ts accepted and queued it). Read top
// to bottom, as a turn goes:
//
//   CLAIMED   runTurn: the log is claimed under the lease's fencing token
//             (turn-repository.ts fenced the row with the same token); from
//             here one of three ways -
//   TAKEN OVER  recoverTurn: the turn had an older runner (previousToken), which
//             died or could not store it: it is finished from what was streamed;
//   STOPPED   a stop recorded before it started: finished empty, interrupted;
//   RUNNING   streamTurn: the model's reply streams into the log; a stop or a
//             shutdown aborts it (`interrupted`), a lost lease leaves it to
//             the new owner, a store or model fault ends it with an error item
//             naming the store (state_unavailable, storage_unavailable) or the model;
//   FINISHING finishTurn: the reply is stored, exactly as streamed, the caches
//             dropped, the context list updated;
//   ENDED     endStream: the stream's last items (title, error, completion
//             patch, message_stream_complete, [DONE]), the log finished.
//
// Every way ends in FINISHING and ENDED, so every reader gets the terminal
// items; only a runner fenced out (a newer owner holds the turn) writes
// nothing. When the database cannot be reached for the final write the stream
// still ends as the reply did and the row stays `in_progress` under this
// runner's token: the runner's sweep finishes it from the log once the
// database answers (TAKEN OVER), exactly as streamed. The log keeps it for the
// resume retention (RESUME_RETENTION_MS); past that the sweep falls back to
// the row's last checkpoint. With logs that die with the process the reply so
// far is also saved to the database at each tick of the reply checkpoints
// (reply-checkpoints.ts), so a crash loses at most a tick of text.
import {
  TurnLogFencedError,
  type TurnLogInfo,
  type TurnLogStore,
} from '../../state/turn-log/turn-log-store.ts'
import { isDatabaseUnavailable } from '../../storage/db.ts'
import { enabledInstructionsText } from '../instructions/instructions.ts'
import { type StoredMessage, type Turn, unixSeconds } from '../messages.ts'
import { modelOf } from '../model/catalogue.ts'
import { ModelError } from '../model/provider.ts'
import { contextForTurn, forgetContext, recordReply } from '../reads/context.ts'
import { finishReply, type ReplySteps, type TurnClaim, turnInputs } from '../sql/turn-repository.ts'
import {
  appendedText,
  completionItem,
  doneItem,
  errorItem,
  type FinishType,
  finishOf,
  firstTokenMarkerItem,
  frameOf,
  holdsTitle,
  type StreamErrorCode,
  type StreamItem,
  streamCompleteItem,
  titleGenerationItem,
} from '../stream/encoding.ts'
import { ReplyItems } from '../stream/reply-items.ts'
import { streamedSteps } from '../stream/streamed-steps.ts'
import { GAVE_UP, withinGraceOfAbort } from './abort-grace.ts'
import { AttachmentReadError, readAttachments } from './attachments.ts'
import { invalidateReads, type TurnDeps } from './deps.ts'
import { isTurnLogFault } from './log-restore.ts'
import { modelRequest } from './model-request.ts'
import type { TurnReport } from './observer.ts'
import { openTurnLog, replyStart } from './prefix.ts'
import { createReplyLog, prefixOf, StateFaultError } from './reply-log.ts'
import { type EndingTitle, storedEndingTitle, titledReplyLog } from './title.ts'
import { type ReplyEvent, replyEvents } from './tool-loop.ts'

const STATE_FAULT_DETAIL =
  'The turn state store did not answer in time; the reply stops here. The text so far is kept.'
const STORAGE_FAULT_DETAIL =
  'The database did not answer in time; the reply stops here. The text so far is kept.'
const SERVER_FAULT_DETAIL = 'The reply failed on the server. The text so far is kept.'
/** How long a turn waits for its files when the deps do not say. */
const FILE_READ_MS = 10_000

/** Why a running turn was aborted: a user's stop, a shutdown, or the lease was lost. */
export type AbortReason = 'stop' | 'shutdown' | 'lost'

interface TurnRun {
  /** Fencing token of the lease the runner holds. */
  token: number
  /** Aborted with an AbortReason. */
  signal: AbortSignal
  /** The turn's user messages when this process accepted it (saves a query). */
  inputs?: readonly StoredMessage[]
  /** The log was opened under `token` as the turn was accepted: it needs no claim. */
  logOpened?: boolean
  /** Filled in as the turn runs: what a shutdown reports of a turn it could not wait for. */
  progress?: TurnProgress
}

/** How far a running turn got: the text its log holds, and whether its reply is stored. */
export interface TurnProgress {
  text: () => string
  stored: boolean
}

/**
 * The turn's messages besides the reply (CONTRACT §21): stored with it, in
 * the tree between what it answers and the reply; `leadFrames` make the
 * reply the streamed message again before its completion patch.
 */
interface TurnSteps extends ReplySteps {
  leadFrames: readonly string[]
}

interface TurnEnding {
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
type FinishOutcome = 'lost' | 'stored' | 'deferred' | 'not_stored'

/** Whether the turn is done with; false leaves it to a newer owner or to the sweep. */
const turnIsOver = (outcome: FinishOutcome) => outcome === 'stored' || outcome === 'not_stored'

/** Runs a turn claimed with run.token; resolves true once it is over, false when it is not this runner's to end. */
export async function runTurn(
  deps: TurnDeps,
  turn: Turn,
  claim: TurnClaim,
  run: TurnRun,
): Promise<boolean> {
  if (run.logOpened)
    return streamTurn(deps, turn, run, run.inputs ?? (await turnInputs(deps.db, turn)))
  let log: TurnLogInfo | undefined
  try {
    log = await deps.logs.claim(turn.messageId, run.token)
  } catch (error) {
    if (error instanceof TurnLogFencedError) return false
    throw error
  }
  if (claim.previousToken !== null) return recoverTurn(deps, turn, run.token, log, claim)
  const inputs = run.inputs ?? (await turnInputs(deps.db, turn))
  if (!log) await reopenLog(deps, turn, inputs, run.token)
  // Stopped before it started: an empty reply, interrupted, without asking the model.
  if (claim.stopRequested) {
    const outcome = await finishTurn(deps, turn, run.token, {
      text: '',
      finish: 'interrupted',
      hasLog: true,
      contextInStep: false,
    })
    return turnIsOver(outcome)
  }
  return streamTurn(deps, turn, run, inputs)
}

/**
 * RUNNING: the model's reply streams into the log (reply-log.ts) - text,
 * thoughts, tool calls and results - until it ends, is stopped, or a store or
 * the model fails; then the turn is finishing, whichever way it went.
 */
async function streamTurn(
  deps: TurnDeps,
  turn: Turn,
  run: TurnRun,
  inputs: readonly StoredMessage[],
): Promise<boolean> {
  const { conversationId, messageId } = turn
  // A first turn names its conversation as the reply streams (title.ts).
  const log = titledReplyLog(
    deps,
    turn,
    inputs,
    createReplyLog(deps, turn, run, inputs),
    run.signal,
  )
  // The turn's messages besides the reply's text: thoughts, tool calls and results (CONTRACT §21).
  const steps = new ReplyItems({
    conversationId,
    reply: replyStart(turn),
    newId: deps.newId,
    now: unixSeconds,
  })
  if (run.progress) run.progress.text = log.text
  deps.observer.turnStarted(turn)
  const startedAt = performance.now()
  let modelFirstChunkMs: number | undefined
  let firstItemMs: number | undefined
  let items = 0
  let ending: Omit<TurnEnding, 'text' | 'hasLog' | 'contextInStep'>
  let contextInStep = false
  try {
    // The model the send was accepted with (its default if the catalogue lost it).
    const model = modelOf(deps.models, turn.metadata.model_slug)
    const context = await contextForTurn(deps, conversationId, turn.metadata.parent_id, inputs)
    // A conversation that keeps its own instructions (an import's) is held to them.
    const instructions =
      turn.conversationInstructions ?? enabledInstructionsText(turn.userInstructions)
    // The list now holds this turn's context: the stored reply may be pushed to it.
    contextInStep = true
    const request = await modelRequest(model, turn, context, instructions, (ids) =>
      readAttachments(deps.files, turn.userId, ids, deps.fileReadMs ?? FILE_READ_MS),
    )
    const askedAt = performance.now()
    const events = replyEvents({
      model,
      request,
      userId: turn.userId,
      signal: run.signal,
      tools: deps.tools,
      warn: deps.warn,
    })
    for await (const event of events) {
      // A stopped call's result (cancelled) is still written: every call streamed has its answer.
      if (run.signal.aborted && event.type !== 'tool_result') break
      if (modelFirstChunkMs === undefined) {
        modelFirstChunkMs = performance.now() - askedAt
        // createTime is when the send was accepted, on whichever instance.
        firstItemMs = Math.max(0, Date.now() - turn.createTime * 1000)
        await log.write(frameOf(firstTokenMarkerItem(conversationId, messageId)))
      }
      items++
      if (event.type === 'text') {
        const frames = steps.text(event.text)
        const last = frames.length - 1
        for (let index = 0; index < last; index++) await log.write(frames[index] as string)
        await log.write(frames[last] as string, event.text)
        continue
      }
      for (const frame of stepFrames(steps, event)) await log.write(frame)
    }
    await log.settle()
    ending = { finish: run.signal.aborted ? 'interrupted' : 'stop' }
  } catch (error) {
    // Appends still in flight land (or fail, and are written back) before
    // the ending is written; a log that could not be written back is not tried twice.
    const failure =
      error instanceof StateFaultError
        ? undefined
        : await log.settle().then(
            () => undefined,
            (cause: unknown) => cause,
          )
    if (error instanceof TurnLogFencedError || failure instanceof TurnLogFencedError) {
      log.forget()
      return false
    }
    ending = failedEnding(deps, error, run.signal)
  }
  // A runner that lost its turn leaves it to the new owner.
  if (run.signal.reason === 'lost') {
    log.forget()
    return false
  }
  const outcome = await finishTurn(deps, turn, run.token, {
    text: log.text(),
    ...ending,
    hasLog: true,
    contextInStep,
    restoreLog: log.restore,
    steps: turnSteps(steps),
    stats: { items, durationMs: performance.now() - startedAt, modelFirstChunkMs, firstItemMs },
    progress: run.progress,
    title: log.endingTitle,
  })
  log.forget()
  return turnIsOver(outcome)
}

export const INTERRUPTED_DETAIL =
  'The reply was interrupted: the server producing it stopped. The text so far is kept.'

/**
 * TAKEN OVER: a dead runner's turn (or one whose final write found the
 * database away) is finished from what its log, else its row's checkpoint,
 * holds - exactly as streamed - and ends `interrupted` unless it had ended.
 */
async function recoverTurn(
  deps: TurnDeps,
  turn: Turn,
  token: number,
  log: TurnLogInfo | undefined,
  checkpoint: Pick<TurnClaim, 'content' | 'checkpointSteps'>,
): Promise<boolean> {
  // The log, where it survived, is exactly what was streamed.
  const frames = log ? await deps.logs.readAll(turn.messageId) : undefined
  const text = frames ? appendedText(frames) : checkpoint.content.parts.join('')
  const streamedFinish = log?.finished && frames ? finishOf(frames) : undefined
  // Thoughts, calls and results the log (else the checkpoint) shows are
  // stored as streamed; no call runs again.
  const stepFrames = frames ?? checkpoint.checkpointSteps ?? undefined
  const steps = stepFrames && streamedSteps(stepFrames, replyStart(turn), turn.conversationId)
  const outcome = await finishTurn(
    deps,
    turn,
    token,
    streamedFinish
      ? { text, finish: streamedFinish, hasLog: false, contextInStep: false, steps }
      : {
          text,
          finish: 'error',
          error: { code: 'interrupted', detail: INTERRUPTED_DETAIL },
          hasLog: log !== undefined && !log.finished,
          contextInStep: false,
          steps,
          // The dead runner may have streamed the title already.
          titleStreamed: frames !== undefined && holdsTitle(frames),
        },
  )
  return turnIsOver(outcome)
}

/**
 * FINISHING: the reply is stored under the claim's token, the cached reads
 * dropped and the context list brought up to date; then ENDED: the stream's
 * last items are written and the log finished. A database that does not
 * answer leaves the row for the sweep (`deferred`), the stream ends all the same.
 */
async function finishTurn(
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

/** A log that did not survive (in-process logs after a restart) starts again. */
async function reopenLog(
  deps: TurnDeps,
  turn: Turn,
  inputs: readonly StoredMessage[],
  token: number,
): Promise<void> {
  await openTurnLog(deps, turn.userId, prefixOf(turn, inputs))
  await deps.logs.claim(turn.messageId, token)
}

/** What the ending stores and streams of the turn's steps; the reply made current first. */
function turnSteps(steps: ReplyItems): TurnSteps {
  const leadFrames = steps.finish()
  return { records: steps.steps(), reply: steps.reply, leadFrames }
}

/** The frames of an event that is not reply text: reasoning, a tool call, its result. */
function stepFrames(steps: ReplyItems, event: Exclude<ReplyEvent, { type: 'text' }>): string[] {
  if (event.type === 'reasoning') return steps.reasoning(event.text)
  if (event.type === 'tool_call')
    return steps.toolCall(event.call.name, event.call.arguments).frames
  return steps.toolResult(event.call.name, event.result)
}

/** How a turn that threw ends, named after what failed: the model, a store, or the server. */
function failedEnding(
  deps: TurnDeps,
  error: unknown,
  signal: AbortSignal,
): Omit<TurnEnding, 'text' | 'hasLog' | 'contextInStep'> {
  if (signal.aborted) return { finish: 'interrupted' }
  if (error instanceof ModelError)
    return { finish: 'error', error: { code: 'model_error', detail: error.detail } }
  if (error instanceof AttachmentReadError) {
    deps.warn('could not read the attached files of a turn', error.cause ?? error)
    return { finish: 'error', error: { code: 'attachment_unavailable', detail: error.detail } }
  }
  // The log's faults reach here wrapped (reply-log.ts); a bare socket error
  // (ECONNRESET…) is the database's, whose reads the turn makes directly.
  const stateFault = error instanceof StateFaultError
  if (!stateFault && isDatabaseUnavailable(error)) {
    deps.warn('the database failed mid-turn; the reply is kept as streamed', error)
    return { finish: 'error', error: { code: 'storage_unavailable', detail: STORAGE_FAULT_DETAIL } }
  }
  if (stateFault || isTurnLogFault(error)) {
    deps.warn('the turn state failed mid-turn; the reply is kept as streamed', error)
    return { finish: 'error', error: { code: 'state_unavailable', detail: STATE_FAULT_DETAIL } }
  }
  deps.warn('turn failed before the reply finished', error)
  return { finish: 'error', error: { code: 'server_error', detail: SERVER_FAULT_DETAIL } }
}
