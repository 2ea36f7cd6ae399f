// Finishing a turn whose runner did not: either it died (CONTRACT §13) - the
// reply keeps the text checkpointed before the crash (the log's append items
// where the log survived, else the row's last database checkpoint, which also
// holds the frames of its thoughts, tool calls and results), is stored
// as `finished_partial_completion`, and the stream ends with an `interrupted`
// error item - or its stream ended but the final write found the database
// unavailable (finish.ts): the finished log then holds the whole reply and how
// it ended, and it is stored exactly so. The context list is dropped (the old
// runner may have pushed part of the turn to it) and rebuilt by the next turn.
import type { TurnLogInfo } from '../../state/turn-log/turn-log-store.ts'
import type { Turn } from '../messages.ts'
import type { TurnClaim } from '../sql/turn-repository.ts'
import { appendedText, finishOf, holdsTitle } from '../stream/encoding.ts'
import { streamedSteps } from '../stream/streamed-steps.ts'
import type { TurnDeps } from './deps.ts'
import { finishTurn, turnIsOver } from './finish.ts'
import { replyStart } from './prefix.ts'

export const INTERRUPTED_DETAIL =
  'The reply was interrupted: the server producing it stopped. The text so far is kept.'

export async function recoverTurn(
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
