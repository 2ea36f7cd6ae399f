// Finishing the turn of a runner that died (CONTRACT §13): the reply keeps the
// text checkpointed before the crash (the log's append items where the log
// survived, else the row's last database checkpoint), is stored as
// `finished_partial_completion`, and the stream ends with an `interrupted`
// error item. The context list is dropped (the dead runner may have pushed
// part of the turn to it) and rebuilt by the next turn.
import type { TurnLogInfo } from '../../state/turn-log-store.ts'
import { appendedText } from '../encoding.ts'
import type { TextContent } from '../messages.ts'
import type { QueuedTurn } from '../turn-repository.ts'
import type { TurnDeps } from './deps.ts'
import { finishTurn } from './finish.ts'

export const INTERRUPTED_DETAIL =
  'The reply was interrupted: the server producing it stopped. The text so far is kept.'

export async function recoverTurn(
  deps: TurnDeps,
  turn: QueuedTurn,
  token: number,
  log: TurnLogInfo | undefined,
  checkpoint: TextContent,
): Promise<boolean> {
  // The log, where it survived, is exactly what was streamed.
  const text = log
    ? appendedText(await deps.logs.readAll(turn.messageId))
    : checkpoint.parts.join('')
  const outcome = await finishTurn(deps, turn, token, {
    text,
    finish: 'error',
    error: { code: 'interrupted', detail: INTERRUPTED_DETAIL },
    hasLog: log !== undefined && !log.finished,
    contextInStep: false,
  })
  return outcome !== 'lost'
}
