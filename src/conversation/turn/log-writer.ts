// Writing a running turn's items to its log without waiting for each append.
// The TurnLogStore applies one writer's appends in call order, so the runner
// goes on to the model's next chunk while earlier ones are being stored, and
// what piles up meanwhile leaves in one batch (with a fast model, many items
// of a turn share a round trip instead of taking one each). At most maxAhead
// appends are outstanding; the first failure is thrown by the next write and
// by settle(). A write that need not wait returns nothing rather than a
// promise: the runner writes one frame per chunk, and waits (with what
// waiting costs: reply-log.ts bounds it by the turn's abort) only when one
// is returned.
import type { TurnLogStore } from '../../state/turn-log/turn-log-store.ts'

export interface LogWriter {
  /**
   * Queues a frame; `stored` runs once it is in the log (in write order).
   * Returns undefined, or when maxAhead appends are outstanding a promise
   * that resolves once there is room again. Throws the first failure (as
   * does the promise).
   */
  write(frame: string, stored?: () => void): Promise<void> | undefined
  /** Resolves once every write is stored; throws the first failure. */
  settle(): Promise<void>
}

export function createLogWriter(
  logs: TurnLogStore,
  messageId: string,
  token: number,
  maxAhead = 64,
): LogWriter {
  let outstanding = 0
  let failed: { error: unknown } | undefined
  // Appends of one writer settle in order, so the last one settling means all did.
  let last: Promise<void> = Promise.resolve()
  const check = () => {
    if (failed) throw failed.error
  }
  return {
    write(frame, stored) {
      check()
      outstanding++
      last = logs.append(messageId, [frame], token).then(
        () => {
          outstanding--
          if (!failed) stored?.()
        },
        (error: unknown) => {
          outstanding--
          failed ??= { error }
        },
      )
      return outstanding >= maxAhead ? last.then(check) : undefined
    },
    async settle() {
      await last
      check()
    },
  }
}
