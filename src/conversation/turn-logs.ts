// Keeps turn logs resumable by their assistant message id while the turn runs
// and for a retention period after it ends (CONTRACT §4.4: at least 10 min).
import type { TurnLog } from './turn-log.ts'

export class TurnLogs {
  private readonly logs = new Map<string, TurnLog>()
  private readonly sweeper: ReturnType<typeof setInterval>

  constructor(
    private readonly retentionMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(retentionMs, 60_000))
    this.sweeper.unref?.()
  }

  add(log: TurnLog): void {
    this.logs.set(log.messageId, log)
  }

  /** The log of that assistant message, unless it ended too long ago. */
  get(messageId: string): TurnLog | undefined {
    const log = this.logs.get(messageId)
    if (log && this.expired(log)) {
      this.logs.delete(messageId)
      return undefined
    }
    return log
  }

  get size(): number {
    return this.logs.size
  }

  sweep(): void {
    for (const [id, log] of this.logs) if (this.expired(log)) this.logs.delete(id)
  }

  close(): void {
    clearInterval(this.sweeper)
    this.logs.clear()
  }

  private expired(log: TurnLog): boolean {
    return log.finishedAt !== undefined && this.now() - log.finishedAt > this.retentionMs
  }
}
