// Deleting conversations for good (CONTRACT §11, §13). Turns running or
// queued in them are stopped first, on whichever instance runs them, and
// awaited for a bounded time, so each stream ends as a stop ends it (§12).
// Then the rows go (messages and feedback cascade), then every cached key of
// the conversations and their turn logs, so reads and resumes find nothing.
import type { StopChannel } from '../../state/stop-channel.ts'
import type { TurnLogStore } from '../../state/turn-log/turn-log-store.ts'
import type { Cache } from '../../storage/cache.ts'
import type { Db } from '../../storage/db.ts'
import { contextKey, historyKey, listKey } from '../reads/cache-keys.ts'
import { deleteConversationRows } from '../sql/conversations-repository.ts'
import { requestStopAll } from '../sql/turn-repository.ts'

export interface DeleteDeps {
  db: Db
  cache: Cache
  logs: TurnLogStore
  stops: StopChannel
  warn: (message: string, error: unknown) => void
  /** Longest wait for stopped turns to end (a dead runner never ends its turn). */
  stopWaitMs: number
}

/** Keys per cache call and logs removed at once, so a bulk delete stays in bounded batches. */
const BATCH = 500

/**
 * Deletes the user's conversation, or all the user's conversations when
 * `conversationId` is undefined; resolves with the ids deleted (none when
 * the conversation is missing or someone else's).
 */
export async function deleteConversations(
  deps: DeleteDeps,
  userId: string,
  conversationId: string | undefined,
): Promise<string[]> {
  const turns = await requestStopAll(deps.db, userId, conversationId)
  await Promise.all(
    turns.map((turn) =>
      deps.stops.publish(turn).catch((error) => deps.warn('could not send a stop', error)),
    ),
  )
  await untilEnded(
    deps.logs,
    turns.map((turn) => turn.messageId),
    deps.stopWaitMs,
  )
  const deleted = await deleteConversationRows(deps.db, userId, conversationId)
  const keys = [
    listKey(userId),
    ...deleted.conversationIds.flatMap((id) => [historyKey(id), contextKey(id)]),
  ]
  for (let start = 0; start < keys.length; start += BATCH)
    await deps.cache
      .del(...keys.slice(start, start + BATCH))
      .catch((error) =>
        deps.warn('could not drop the cached keys of a deleted conversation', error),
      )
  for (let start = 0; start < deleted.replyIds.length; start += BATCH)
    await Promise.all(
      deleted.replyIds
        .slice(start, start + BATCH)
        .map((id) =>
          deps.logs.remove(id).catch((error) => deps.warn('could not remove a turn log', error)),
        ),
    )
  return deleted.conversationIds
}

/** Resolves when every log named has finished (or is gone), or after timeoutMs. */
async function untilEnded(logs: TurnLogStore, messageIds: string[], timeoutMs: number) {
  if (messageIds.length === 0) return
  const signal = AbortSignal.timeout(timeoutMs)
  await Promise.all(
    messageIds.map(async (messageId) => {
      try {
        const info = await logs.info(messageId)
        if (!info || info.finished) return
        for await (const _ of logs.read(messageId, info.length, signal)) {
          // Only the end of the log matters here.
        }
      } catch {
        // A log that cannot be followed is waited for no longer; the delete goes on.
      }
    }),
  )
}
