// One actor per active conversation: a mailbox that runs its tasks one at a
// time, in arrival order, so concurrent sends to a conversation never
// interleave. It knows nothing of HTTP; the registry decides its lifetime.

export class ConversationActor {
  private tail: Promise<void> = Promise.resolve()
  private pending = 0
  private lastActivity: number

  constructor(
    readonly conversationId: string,
    private readonly now: () => number = Date.now,
  ) {
    this.lastActivity = now()
  }

  /** Tasks queued or running. */
  get queued(): number {
    return this.pending
  }

  /** Epoch ms of the last enqueue or completion. */
  get lastActiveAt(): number {
    return this.lastActivity
  }

  /** Runs task after every task enqueued before it; its failure does not stop the queue. */
  enqueue<T>(task: () => Promise<T>): Promise<T> {
    this.pending++
    this.lastActivity = this.now()
    const run = this.tail.then(task)
    this.tail = run.then(
      () => this.settle(),
      () => this.settle(),
    )
    return run
  }

  /** Resolves once every task enqueued so far has finished. */
  whenIdle(): Promise<void> {
    return this.tail
  }

  private settle(): void {
    this.pending--
    this.lastActivity = this.now()
  }
}
