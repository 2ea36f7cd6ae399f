// The ordered, append-only items of one turn's stream. The turn writes it; each
// HTTP response (and each resume) is a subscriber from some offset, so a
// disconnect never touches the turn itself.

export class TurnLog {
  private readonly items: Uint8Array[] = []
  private waiters = new Set<() => void>()
  private closedAt: number | undefined

  constructor(
    readonly conversationId: string,
    /** The assistant message this turn produces; resume tokens name it. */
    readonly messageId: string,
    /** The user the turn belongs to. */
    readonly userId: string,
  ) {}

  get length(): number {
    return this.items.length
  }

  /** Epoch ms when the turn's stream ended; undefined while it runs. */
  get finishedAt(): number | undefined {
    return this.closedAt
  }

  append(item: Uint8Array): void {
    if (this.closedAt !== undefined) throw new Error('TurnLog: append after close')
    this.items.push(item)
    this.wakeAll()
  }

  close(now = Date.now()): void {
    if (this.closedAt !== undefined) return
    this.closedAt = now
    this.wakeAll()
  }

  /**
   * Yields items offset, offset+1, … as they arrive, ending after the last item
   * of a closed log or when signal aborts.
   */
  async *subscribe(offset = 0, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
    let next = offset
    while (!signal?.aborted) {
      while (next < this.items.length) {
        yield this.items[next++] as Uint8Array
        if (signal?.aborted) return
      }
      if (this.closedAt !== undefined) return
      await this.nextChange(signal)
    }
  }

  private nextChange(signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const wake = () => {
        this.waiters.delete(wake)
        signal?.removeEventListener('abort', wake)
        resolve()
      }
      this.waiters.add(wake)
      signal?.addEventListener('abort', wake)
    })
  }

  private wakeAll(): void {
    for (const wake of [...this.waiters]) wake()
  }
}
