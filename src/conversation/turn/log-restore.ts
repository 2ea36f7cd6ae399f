// Bringing a running turn's log back to what its runner wrote, after the turn
// state failed under it (CONTRACT §19): Redis frozen past the writes' retry
// window, killed and restarted empty, flushed, or failed over with writes
// lost. The runner holds every frame it wrote (the reply lives with the runner
// until it is stored), so once the store answers it claims the log again with
// its own token and writes back whatever the log lacks - the whole log when it
// vanished - at the same offsets as before: readers waiting on it
// (stream-reader.ts) go on from the item they reached. It retries until the
// store answers or the deadline passes; a log another runner claimed or ended
// meanwhile is not this runner's any more.
import { setTimeout as sleep } from 'node:timers/promises'
import { isStateUnavailable } from '../../state/state-unavailable.ts'
import {
  TurnLogFencedError,
  type TurnLogIdentity,
  TurnLogMissingError,
  type TurnLogStore,
} from '../../state/turn-log/turn-log-store.ts'

/** Whether an error of the turn log says the store failed (not a fence, not a bug). */
export const isTurnLogFault = (error: unknown) =>
  error instanceof TurnLogMissingError || isStateUnavailable(error)

export interface LogToRestore {
  identity: TurnLogIdentity
  /** The fencing token the runner holds. */
  token: number
  /** Every frame the log should hold, in order: its first items, then what the runner appended. */
  frames: () => Promise<string[]>
}

/** restored: the log holds every frame again; lost: another runner owns it; unavailable: the store did not answer in time. */
export type RestoreOutcome = 'restored' | 'lost' | 'unavailable'

const FIRST_RETRY_MS = 100
const LONGEST_RETRY_MS = 1_000

export async function restoreLog(
  logs: TurnLogStore,
  log: LogToRestore,
  until: { deadline: number; signal: AbortSignal },
): Promise<RestoreOutcome> {
  const { messageId } = log.identity
  let delay = FIRST_RETRY_MS
  for (;;) {
    try {
      const frames = await log.frames()
      const info = await logs.claim(messageId, log.token)
      if (!info) {
        await logs.open(log.identity, frames)
        if (await logs.claim(messageId, log.token)) return 'restored'
      } else {
        if (info.finished || info.length > frames.length) return 'lost'
        if (info.length < frames.length)
          await logs.append(messageId, frames.slice(info.length), log.token)
        return 'restored'
      }
    } catch (error) {
      if (error instanceof TurnLogFencedError) return 'lost'
      // Anything else (the store still away, a log opened meanwhile): try again.
    }
    if (until.signal.aborted || Date.now() + delay > until.deadline) return 'unavailable'
    await sleep(delay, undefined, { signal: until.signal }).catch(() => {})
    delay = Math.min(delay * 2, LONGEST_RETRY_MS)
  }
}
