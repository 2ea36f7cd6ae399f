// Running one queued turn for the holder of the conversation's lease, once
// claimed under the lease's fencing token (turn-repository.ts): claim its log
// too, then either finish a dead runner's turn (recover.ts) or stream the
// model's reply into the log (log-writer.ts) and store it. With logs that die
// with the process, the reply so far is also saved to the database at each
// tick of the reply checkpoints (reply-checkpoints.ts), so a crash loses at
// most a tick of text.
import { TurnLogFencedError, type TurnLogInfo } from '../../state/turn-log/turn-log-store.ts'
import { isDatabaseUnavailable } from '../../storage/db.ts'
import { type StoredMessage, type Turn, unixSeconds } from '../messages.ts'
import { modelOf } from '../model/catalogue.ts'
import { ModelError } from '../model/provider.ts'
import { contextForTurn } from '../reads/context.ts'
import { type TurnClaim, turnInputs } from '../sql/turn-repository.ts'
import { firstTokenMarkerItem, frameOf } from '../stream/encoding.ts'
import { ReplyItems } from '../stream/reply-items.ts'
import { AttachmentReadError, readAttachments } from './attachments.ts'
import type { TurnDeps } from './deps.ts'
import { finishTurn, type TurnEnding, type TurnSteps, turnIsOver } from './finish.ts'
import { isTurnLogFault } from './log-restore.ts'
import { modelRequest, userInstructions } from './model-request.ts'
import { openTurnLog, replyStart } from './prefix.ts'
import { recoverTurn } from './recover.ts'
import { createReplyLog, prefixOf, StateFaultError } from './reply-log.ts'
import { titledReplyLog } from './title.ts'
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

export interface TurnRun {
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

/** Runs a turn claimed with run.token; resolves true once it is over, false when it is not this runner's to end. */
export async function runTurn(
  deps: TurnDeps,
  turn: Turn,
  claim: TurnClaim,
  run: TurnRun,
): Promise<boolean> {
  if (run.logOpened)
    return streamReply(deps, turn, run, run.inputs ?? (await turnInputs(deps.db, turn)))
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
  return streamReply(deps, turn, run, inputs)
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

async function streamReply(
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
    const [context, instructions] = await Promise.all([
      contextForTurn(deps, conversationId, turn.metadata.parent_id, inputs),
      // A conversation that keeps its own instructions (an import's) is held to them.
      turn.conversationInstructions ?? userInstructions(deps, turn.userId),
    ])
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
