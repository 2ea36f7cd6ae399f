// The log of a reply as the runner streaming it sees it: every frame it wrote
// (kept until the turn ends: the reply lives with its runner until it is
// stored), the text the log holds so far, and the way back after a store
// fault. Frames go out through a LogWriter (appends pipelined); a write that
// finds the turn state failed waits for the store, writes back what the log
// lost (log-restore.ts) and goes on. When the store does not answer within
// storeRecoveryMs (or the turn is aborted meanwhile) it throws
// StateFaultError, and the turn ends with the text the log held - what its
// readers were sent. Every running reply is also registered with the reply
// checkpoints: its row's heartbeat (and, with in-process logs, its text and
// the frames of its steps: every acknowledged frame that is not reply text).
import { TurnLogFencedError } from '../../state/turn-log/turn-log-store.ts'
import type { StoredMessage, Turn } from '../messages.ts'
import { GAVE_UP, withinGraceOfAbort } from './abort-grace.ts'
import type { TurnDeps } from './deps.ts'
import { isTurnLogFault, type LogToRestore, restoreLog } from './log-restore.ts'
import { createLogWriter } from './log-writer.ts'
import { signedPrefix, type TurnPrefix } from './prefix.ts'

/** The turn state failed mid-turn and did not answer again in time. */
export class StateFaultError extends Error {
  constructor(override readonly cause: unknown) {
    super('the turn state did not answer in time')
    this.name = 'StateFaultError'
  }
}

/** What a turn's first frames are built from (prefix.ts). */
export const prefixOf = (
  turn: Turn,
  inputs: readonly StoredMessage[],
): Omit<TurnPrefix, 'token'> => ({
  conversationId: turn.conversationId,
  messageId: turn.messageId,
  createTime: turn.createTime,
  modelSlug: turn.metadata.model_slug,
  parentId: turn.metadata.parent_id,
  messageType: turn.metadata.message_type ?? 'next',
  inputs,
})

/** How long an aborted turn (a stop, a shutdown) still waits for its appends to land. */
const ABORTED_WAIT_MS = 500

/**
 * `pending`, unless the turn is aborted and it has not settled ABORTED_WAIT_MS
 * later: then a StateFaultError (the store is slow or gone, and an aborted
 * turn does not wait out the writes' retries - it stores what the log holds).
 */
async function boundedByAbort<T>(pending: Promise<T>, signal: AbortSignal): Promise<T> {
  const settled = await withinGraceOfAbort(pending, signal, ABORTED_WAIT_MS)
  if (settled === GAVE_UP)
    throw new StateFaultError(new Error('the turn was aborted while its log was written'))
  return settled
}

export interface ReplyLog {
  /** Appends a frame; `chunk` is the reply text it carries, if any. Throws StateFaultError or TurnLogFencedError. */
  write(frame: string, chunk?: string): Promise<void>
  /** Resolves once every frame is in the log; throws as write does. */
  settle(): Promise<void>
  /** The reply text the log holds: what readers can have been sent. */
  text(): string
  /** Writes back what the log lost after a fault; false when the store did not answer in time. */
  restore(): Promise<boolean>
  /** The turn ended here: no more heartbeat for its row. */
  forget(): void
}

export function createReplyLog(
  deps: TurnDeps,
  turn: Turn,
  run: { token: number; signal: AbortSignal },
  inputs: readonly StoredMessage[],
): ReplyLog {
  const { conversationId, messageId } = turn
  /** Every frame written after the log's first items. */
  const appended: string[] = []
  /** The text of every append written, and of those the log acknowledged. */
  let written = ''
  let held = ''
  /** The frames written and acknowledged that carry no reply text: the steps' (and markers, which a takeover skips). */
  const writtenSteps: string[] = []
  const heldSteps: string[] = []
  let writer = createLogWriter(deps.logs, messageId, run.token)
  const checkpoint = () =>
    deps.checkpoints?.update({
      conversationId,
      messageId,
      token: run.token,
      text: held,
      steps: heldSteps,
    })
  checkpoint()

  const target: LogToRestore = {
    identity: { messageId, conversationId, userId: turn.userId },
    token: run.token,
    frames: async () => [...signedPrefix(deps, turn.userId, prefixOf(turn, inputs)), ...appended],
  }

  async function restore(): Promise<boolean> {
    await writer.settle().catch(() => {})
    const outcome = await restoreLog(deps.logs, target, {
      deadline: Date.now() + deps.storeRecoveryMs,
      signal: run.signal,
    })
    if (outcome === 'lost') throw new TurnLogFencedError(messageId)
    if (outcome === 'unavailable') return false
    writer = createLogWriter(deps.logs, messageId, run.token)
    held = written
    heldSteps.splice(0, heldSteps.length, ...writtenSteps)
    checkpoint()
    return true
  }

  async function recover(error: unknown): Promise<void> {
    if (error instanceof StateFaultError || !isTurnLogFault(error)) throw error
    deps.warn('the turn state failed mid-turn; the log is written back when it answers', error)
    if (!(await restore())) throw new StateFaultError(error)
  }

  return {
    async write(frame, chunk) {
      appended.push(frame)
      if (chunk !== undefined) written += chunk
      else writtenSteps.push(frame)
      const stored =
        chunk === undefined
          ? () => {
              heldSteps.push(frame)
              checkpoint()
            }
          : () => {
              held += chunk
              checkpoint()
            }
      try {
        const room = writer.write(frame, stored)
        if (room) await boundedByAbort(room, run.signal)
      } catch (error) {
        await recover(error)
      }
    },
    async settle() {
      try {
        await boundedByAbort(writer.settle(), run.signal)
      } catch (error) {
        await recover(error)
      }
    },
    text: () => held,
    restore,
    forget: () => deps.checkpoints?.forget(messageId),
  }
}
