// Checkpoints of the replies this process streams while its turn logs die with
// it (the embedded default, durable: false): every intervalMs the text of each
// running reply that grew since its last checkpoint is saved to its row, all
// of them in one statement, so a thousand streams cost one UPDATE a tick
// rather than one each (measured by bench/harness's many-streams scenario).
// A crash loses at most a tick of text: recover.ts keeps what the row holds.
// A checkpoint only lands on a row still in progress under the runner's
// fencing token, so one that arrives after the final write changes nothing.
import type { Db } from '../../storage/db.ts'
import { checkpointReplies, type ReplyCheckpoint } from '../sql/turn-repository.ts'

export interface ReplyCheckpoints {
  /** The text a running reply has in its log now; saved at the next tick unless replaced. */
  update(checkpoint: ReplyCheckpoint): void
  /** The reply ended (its final write stores it whole): nothing more of it is saved. */
  forget(messageId: string): void
  /** Stops the ticks; what was not saved yet is not. */
  close(): void
}

export function createReplyCheckpoints(
  db: Db,
  intervalMs: number,
  warn: (message: string, error: unknown) => void,
): ReplyCheckpoints {
  /** The newest text of each reply not yet saved, by message id. */
  let pending = new Map<string, ReplyCheckpoint>()
  let saving = false
  let timer: ReturnType<typeof setInterval> | undefined

  async function save() {
    if (saving || pending.size === 0) return
    const batch = [...pending.values()]
    pending = new Map()
    saving = true
    try {
      await checkpointReplies(db, batch)
    } catch (error) {
      warn('could not checkpoint the replies', error)
    } finally {
      saving = false
    }
  }

  return {
    update(checkpoint) {
      pending.set(checkpoint.messageId, checkpoint)
      if (timer) return
      timer = setInterval(() => void save(), intervalMs)
      timer.unref?.()
    },
    forget(messageId) {
      pending.delete(messageId)
    },
    close() {
      clearInterval(timer)
      timer = undefined
      pending.clear()
    },
  }
}
