// What every step of a turn works with, passed in (never module-level clients).

import type { TurnLogStore } from '../../state/turn-log/turn-log-store.ts'
import type { Cache } from '../../storage/cache.ts'
import type { Db } from '../../storage/db.ts'
import type { ModelCatalogue } from '../model/catalogue.ts'
import { historyKey, listKey } from '../reads/cache-keys.ts'
import type { ResumeTokens } from '../stream/resume-token.ts'
import type { AttachmentFiles } from './attachments.ts'
import type { ConversationObserver } from './observer.ts'
import type { ReplyCheckpoints } from './reply-checkpoints.ts'
import type { TurnTools } from './tool-loop.ts'

export interface TurnDeps {
  db: Db
  cache: Cache
  /** The models a turn may be answered with, by slug (CONTRACT §15). */
  models: ModelCatalogue
  tokens: ResumeTokens
  logs: TurnLogStore
  newId: () => string
  warn: (message: string, error: unknown) => void
  /** Told when turns start and end (logs, metrics). */
  observer: ConversationObserver
  /**
   * Every running reply of this process, saved each tick: the row's heartbeat
   * (a live runner's turn is never taken over) and, with logs that die with
   * the process, its text.
   */
  checkpoints?: ReplyCheckpoints
  /** How long a running turn waits for a store that failed mid-turn before it ends (CONTRACT §19). */
  storeRecoveryMs: number
  /** The users' uploaded files, read into a model's context (CONTRACT §20). */
  files?: AttachmentFiles
  /** How long a turn waits to read its files. */
  fileReadMs?: number
  /** The tools offered to models that take them (CONTRACT §21); none when absent. */
  tools?: TurnTools
  /**
   * Aborted when a shutdown stops the turns still running (runner.ts close):
   * from then on a turn's ending does not wait for the database - its stream
   * ends at once, its reply is left for a takeover (lifecycle.ts).
   */
  shutdown?: AbortSignal
  /** TITLE_MODEL: the catalogue model that names conversations; absent: the reply's model. */
  titleModel?: string
  /** How long a reply's ending waits for a title model still at work (title.ts's TITLE_WAIT_MS when absent). */
  titleWaitMs?: number
}

/**
 * Drops the cached reads a stored message makes stale (CONTRACT §4.7). With
 * the cache down this does nothing: the cache is emptied before it is used
 * again (resilient-cache.ts).
 */
export async function invalidateReads(deps: TurnDeps, conversationId: string, userId: string) {
  await deps.cache.del(historyKey(conversationId), listKey(userId))
}
