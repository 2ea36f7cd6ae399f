// The ConversationObserver of the running service: one log line when a turn
// starts and one when it ends (with the request_id of the send that started
// it, when this process accepted it) (outcome, items, durations; at warn with the
// cause when the model failed or timed out), and the turn and stream metrics. Ids only,
// never message text.
import type { ConversationObserver, TurnRef } from '../conversation/turn/observer.ts'
import type { Logger } from './logger.ts'
import type { Metrics } from './metrics.ts'

const ids = (turn: TurnRef) => ({
  // The send's request id (the access line's), when the turn runs where it was accepted.
  ...(turn.requestId === undefined ? {} : { request_id: turn.requestId }),
  conversation_id: turn.conversationId,
  message_id: turn.messageId,
  user_id: turn.userId,
})

const rounded = (ms: number | undefined) => (ms === undefined ? undefined : Math.round(ms))

export function conversationObserver(log: Logger, metrics: Metrics): ConversationObserver {
  return {
    turnStarted(turn) {
      metrics.turnsStarted.inc()
      log.info(ids(turn), 'turn started')
    },
    turnFinished(turn, report) {
      metrics.turnsFinished.inc({ outcome: report.finish })
      if (report.modelFirstChunkMs !== undefined)
        metrics.modelFirstChunk.observe(report.modelFirstChunkMs / 1000)
      if (report.firstItemMs !== undefined)
        metrics.timeToFirstItem.observe(report.firstItemMs / 1000)
      const fields = {
        ...ids(turn),
        outcome: report.finish,
        stored: report.stored,
        items: report.items,
        duration_ms: rounded(report.durationMs),
        model_first_chunk_ms: rounded(report.modelFirstChunkMs),
        first_item_ms: rounded(report.firstItemMs),
        ...(report.error ? { error_code: report.error.code, cause: report.error.detail } : {}),
      }
      // A model failure or timeout, storage trouble or a dead runner: at warn, with the cause.
      if (report.error) log.warn(fields, 'turn finished')
      else log.info(fields, 'turn finished')
    },
    streamOpened: () => metrics.activeStreams.inc(),
    streamItems: (count) => metrics.streamItems.inc(count),
    streamClosed: () => metrics.activeStreams.dec(),
  }
}
