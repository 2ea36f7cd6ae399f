// An in-process run of one turn log's items, followed by readers in this
// process without touching any store: the whole log in the memory adapter, and
// in the Redis adapter the mirror of what this process appended (items from
// `base` on). Readers wait for the next change, one promise shared by every
// reader of the copy and made only when one waits: a reply's reader waits
// once per item.

/**
 * open: items may follow. finished: no item will follow, readers drain and end.
 * ended: readers end at once (removed, expired, store closed). detached: this
 * copy stops here (the Redis adapter lost track of the log's end), readers
 * continue from the store.
 */
export type LocalTurnLogState = 'open' | 'finished' | 'ended' | 'detached'

export class LocalTurnLog {
  private readonly items: string[] = []
  /** Resolved at the next change; made by the first reader that waits for it. */
  private nextChange: PromiseWithResolvers<void> | undefined
  private current: LocalTurnLogState = 'open'
  /** Date.now() of the last push, for sweeping forgotten mirrors. */
  touchedAt = Date.now()

  /** `base` is the log offset of this copy's first item. */
  constructor(readonly base = 0) {}

  /** The log offset after this copy's last item. */
  get end(): number {
    return this.base + this.items.length
  }

  get state(): LocalTurnLogState {
    return this.current
  }

  /** Whether some reader is waiting for the next change. */
  get waited(): boolean {
    return this.nextChange !== undefined
  }

  /** Every item of this copy, oldest first. */
  all(): string[] {
    return [...this.items]
  }

  push(items: readonly string[]): void {
    if (this.current !== 'open') throw new Error('LocalTurnLog: push after the log was settled')
    for (const item of items) this.items.push(item)
    this.touchedAt = Date.now()
    this.wakeAll()
  }

  /** Leaves the open state for good; later calls are ignored. */
  settle(state: Exclude<LocalTurnLogState, 'open'>): void {
    if (this.current !== 'open') return
    this.current = state
    this.wakeAll()
  }

  /**
   * Yields items from log offset `next` (at least `base`) as they arrive, in
   * batches: every item there is when the reader looks. Returns undefined when
   * the reader is done (finished, ended, aborted), or the offset to continue
   * from elsewhere when this copy was detached.
   */
  async *follow(
    next: number,
    signal?: AbortSignal,
  ): AsyncGenerator<readonly string[], number | undefined> {
    if (next < this.base) throw new Error('LocalTurnLog: offset before the first item')
    // One abort listener for the whole follow, not one per wait: a reader waits
    // once per item. An abort wakes the copy's other readers too; they wait again.
    const onAbort = () => this.wakeAll()
    signal?.addEventListener('abort', onAbort, { once: true })
    try {
      while (!signal?.aborted) {
        if (this.current === 'ended') return undefined
        while (next < this.end) {
          const batch = this.items.slice(next - this.base)
          next = this.end
          yield batch
          // Checked again after each yield: the log may have changed meanwhile.
          if (signal?.aborted || this.isEnded()) return undefined
        }
        if (this.current === 'finished') return undefined
        if (this.current === 'detached') return next
        this.nextChange ??= Promise.withResolvers<void>()
        await this.nextChange.promise
      }
      return undefined
    } finally {
      signal?.removeEventListener('abort', onAbort)
    }
  }

  private isEnded(): boolean {
    return this.current === 'ended'
  }

  /** Wakes every waiting reader; each one waits again for the next change if it wants more. */
  private wakeAll(): void {
    const change = this.nextChange
    this.nextChange = undefined
    change?.resolve()
  }
}
