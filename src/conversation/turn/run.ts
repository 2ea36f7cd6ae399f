// Running one queued turn for the holder of the conversation's lease, once
// claimed under the lease's fencing token (turn-repository.ts): claim its log
// too, then either finish a dead runner's turn (recover.ts) or stream the
// model's reply into the log (log-writer.ts) and store it. With logs that die
// with the process, the reply so far is also saved to the database at each
// tick of the reply checkpoints (reply-checkpoints.ts), so a crash loses at
// most a tick of text.
import { TurnLogFencedError, type TurnLogInfo } from '../../state/turn-log-store.ts'
import type { StoredMessage } from '../messages.ts'
import { modelOf } from '../model/catalogue.ts'
import { ModelError } from '../model/provider.ts'
import { storableChunks } from '../model/storable-output.ts'
import { contextForTurn } from '../reads/context.ts'
import { type QueuedTurn, type TurnClaim, turnInputs } from '../sql/turn-repository.ts'
import { appendFrame, firstTokenMarkerItem, frameOf } from '../stream/encoding.ts'
import type { TurnDeps } from './deps.ts'
import { finishTurn, type TurnEnding, turnIsOver } from './finish.ts'
import { createLogWriter } from './log-writer.ts'
import { modelRequest, userInstructions } from './model-request.ts'
import { openTurnLog } from './prefix.ts'
import { recoverTurn } from './recover.ts'

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
}

/** Runs a turn claimed with run.token; resolves true once it is over, false when it is not this runner's to end. */
export async function runTurn(
  deps: TurnDeps,
  turn: QueuedTurn,
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
  if (claim.previousToken !== null) return recoverTurn(deps, turn, run.token, log, claim.content)
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
  turn: QueuedTurn,
  inputs: readonly StoredMessage[],
  token: number,
): Promise<void> {
  await openTurnLog(deps, turn.userId, {
    conversationId: turn.conversationId,
    messageId: turn.messageId,
    createTime: turn.createTime,
    modelSlug: turn.metadata.model_slug,
    parentId: turn.metadata.parent_id,
    messageType: turn.metadata.message_type ?? 'next',
    inputs,
  })
  await deps.logs.claim(turn.messageId, token)
}

async function streamReply(
  deps: TurnDeps,
  turn: QueuedTurn,
  run: TurnRun,
  inputs: readonly StoredMessage[],
): Promise<boolean> {
  const { conversationId, messageId } = turn
  const writer = createLogWriter(deps.logs, messageId, run.token)
  deps.observer.turnStarted(turn)
  const startedAt = performance.now()
  let modelFirstChunkMs: number | undefined
  let firstItemMs: number | undefined
  let items = 0
  // The reply as stored in the log so far: what is kept when the turn ends early.
  let text = ''
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
    const request = await modelRequest(model, turn, context, instructions)
    const askedAt = performance.now()
    const chunks = storableChunks(model.provider.stream({ ...request, signal: run.signal }))
    for await (const chunk of chunks) {
      if (run.signal.aborted) break
      if (chunk === '') continue
      if (modelFirstChunkMs === undefined) {
        modelFirstChunkMs = performance.now() - askedAt
        // createTime is when the send was accepted, on whichever instance.
        firstItemMs = Math.max(0, Date.now() - turn.createTime * 1000)
        await writer.write(frameOf(firstTokenMarkerItem(conversationId, messageId)))
      }
      items++
      await writer.write(appendFrame(chunk), () => {
        text += chunk
        deps.checkpoints?.update({ conversationId, messageId, token: run.token, text })
      })
    }
    await writer.settle()
    ending = { finish: run.signal.aborted ? 'interrupted' : 'stop' }
  } catch (error) {
    // Appends still in flight land (or fail) before the ending is written.
    const failure = await writer.settle().then(
      () => undefined,
      (cause: unknown) => cause,
    )
    if (error instanceof TurnLogFencedError || failure instanceof TurnLogFencedError) return false
    if (run.signal.aborted) ending = { finish: 'interrupted' }
    else {
      if (!(error instanceof ModelError)) deps.warn('turn failed before the reply finished', error)
      const detail = error instanceof ModelError ? error.detail : 'The model failed to answer.'
      ending = { finish: 'error', error: { code: 'model_error', detail } }
    }
  } finally {
    deps.checkpoints?.forget(messageId)
  }
  // A runner that lost its lease leaves the turn to the new owner.
  if (run.signal.reason === 'lost') return false
  const outcome = await finishTurn(deps, turn, run.token, {
    text,
    ...ending,
    hasLog: true,
    contextInStep,
    stats: { items, durationMs: performance.now() - startedAt, modelFirstChunkMs, firstItemMs },
  })
  return turnIsOver(outcome)
}
