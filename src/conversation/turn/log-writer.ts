// Writing a running turn's items to its log without waiting for each append.
// The TurnLogStore applies one writer's appends in call order, so the runner
// goes on to the model's next chunk while earlier ones are being stored, and
// what piles up meanwhile leaves in one batch (with a fast model, many items
// of a turn share a round trip instead of taking one each). At most maxAhead
// appends are outstanding; the first failure is thrown by the next write and
// by settle().
import type { TurnLogStore } from '../../state/turn-log/turn-log-store.ts'

export interface LogWriter {
  /** Queues a frame; `stored` runs once it is in the log (in write order). */
  write(frame: string, stored?: () => void): Promise<void>
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
    async write(frame, stored) {
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
      if (outstanding >= maxAhead) await last
      check()
    },
    async settle() {
      await last
      check()
    },
  }
}
