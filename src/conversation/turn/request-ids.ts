// The request id of the send that started a turn (the access log's
// `request_id`), carried to the turn's own log lines where it is cheap: a turn
// accepted by this process is remembered by its message id until it finishes,
// and the observer is told it with the turn. A turn run by another instance, or
// taken over after its runner died, has none here: its lines go without one.
// Bounded: a turn accepted here but run elsewhere never finishes here, so the
// oldest ids are dropped past MAX_REMEMBERED.
import type { ConversationObserver, TurnRef } from './observer.ts'

const MAX_REMEMBERED = 10_000

export interface TurnRequestIds {
  /** The send that created the turn of `messageId` came as `requestId`. */
  remember(messageId: string, requestId: string | undefined): void
  /** `observer`, told each turn with its request id when this process knows it. */
  observing(observer: ConversationObserver): ConversationObserver
}

export function createTurnRequestIds(max = MAX_REMEMBERED): TurnRequestIds {
  const ids = new Map<string, string>()
  const withId = (turn: TurnRef): TurnRef => {
    const requestId = ids.get(turn.messageId)
    return requestId === undefined ? turn : { ...turn, requestId }
  }
  return {
    remember(messageId, requestId) {
      if (requestId === undefined) return
      ids.set(messageId, requestId)
      if (ids.size > max) ids.delete(ids.keys().next().value as string)
    },
    observing: (observer) => ({
      ...observer,
      turnStarted: (turn) => observer.turnStarted(withId(turn)),
      turnFinished(turn, report) {
        observer.turnFinished(withId(turn), report)
        ids.delete(turn.messageId)
      },
    }),
  }
}
