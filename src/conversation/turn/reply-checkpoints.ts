// Checkpoints of the replies this process is streaming: every intervalMs each
// running reply's row is touched, all of them in one statement, so a thousand
// streams cost one UPDATE a tick rather than one each (measured by
// bench/harness's many-streams scenario). The touch is the runner's heartbeat:
// a turn whose row was touched within a lease is never taken over
// (claimNextTurn), so a live runner keeps its turn when the turn state loses
// its lease (Redis restarted empty, flushed). With turn logs that die with the
// process (the embedded default, `withText`) the touch also saves the text
// that grew since the last one, and appends the frames of the reply's steps
// (its thoughts, tool calls and results) streamed since: a crash loses at
// most a tick of them,
// and lifecycle.ts recoverTurn keeps what the row holds. A checkpoint only lands on a row still
// in progress under the runner's fencing token, so one that arrives after the
// final write changes nothing.
import type { Db } from '../../storage/db.ts'
import { checkpointReplies, type ReplyCheckpoint } from '../sql/turn-repository.ts'

export interface ReplyCheckpoints {
  /** A running reply and the text its log holds now; touched (and saved) at every tick until forgotten. */
  update(checkpoint: ReplyCheckpoint): void
  /** The reply ended (its final write stores it whole): its row is not touched again. */
  forget(messageId: string): void
  /** Stops the ticks; what was not saved yet is not. */
  close(): void
}

interface Running {
  checkpoint: ReplyCheckpoint
  /** The text changed since the last tick saved it. */
  changed: boolean
  /**
   * How many step frames the row holds: the reply log appends to the one
   * array it hands over, so a change shows in its length, and a tick sends
   * only the frames past it. -1 after a failed save: the next sends them all.
   */
  stepsSaved: number
}

export function createReplyCheckpoints(
  db: Db,
  intervalMs: number,
  warn: (message: string, error: unknown) => void,
  withText: boolean,
): ReplyCheckpoints {
  const running = new Map<string, Running>()
  let saving = false
  let timer: ReturnType<typeof setInterval> | undefined

  async function save() {
    if (saving) return
    if (running.size === 0) {
      clearInterval(timer)
      timer = undefined
      return
    }
    const batch: ReplyCheckpoint[] = []
    for (const reply of running.values()) {
      const { text, steps = [], ...row } = reply.checkpoint
      const newSteps = steps.length !== reply.stepsSaved
      if (withText && (reply.changed || newSteps)) {
        const from = Math.max(0, reply.stepsSaved)
        batch.push({
          ...row,
          text,
          ...(newSteps ? { steps: steps.slice(from), stepsFrom: from } : {}),
        })
        reply.stepsSaved = steps.length
      } else batch.push(row)
      reply.changed = false
    }
    saving = true
    try {
      await checkpointReplies(db, batch)
    } catch (error) {
      // Not saved: sent again at the next tick.
      if (withText)
        for (const reply of running.values()) {
          reply.changed = true
          reply.stepsSaved = -1
        }
      warn('could not checkpoint the replies', error)
    } finally {
      saving = false
    }
  }

  return {
    update(checkpoint) {
      const reply = running.get(checkpoint.messageId)
      if (reply) {
        reply.changed ||= reply.checkpoint.text !== checkpoint.text
        reply.checkpoint = checkpoint
      } else
        running.set(checkpoint.messageId, { checkpoint, changed: !!checkpoint.text, stepsSaved: 0 })
      if (timer) return
      timer = setInterval(() => void save(), intervalMs)
      timer.unref?.()
    },
    forget(messageId) {
      running.delete(messageId)
    },
    close() {
      clearInterval(timer)
      timer = undefined
      running.clear()
    },
  }
}
