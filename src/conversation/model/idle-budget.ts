// A timeout for a stream that may go quiet: a budget of silence that each sign
// of life refills. Used by openai.ts so a stalled upstream fails the turn
// instead of holding it open forever.

/**
 * The time the upstream may stay silent. Only time spent waiting on the network
 * counts: while the consumer handles a yielded chunk the clock is stopped, so a
 * slow consumer never causes a false timeout.
 */
export class IdleBudget {
  private left: number

  constructor(
    private readonly ms: number,
    private readonly onExpire: () => void,
  ) {
    this.left = ms
  }

  /** A sign of life: the full budget is available again. */
  refill(): void {
    this.left = this.ms
  }

  /**
   * Waits for `promise`, spending the budget. When the budget runs out first,
   * calls `onExpire` (which aborts the request, so nothing keeps running) and rejects.
   */
  async wait<T>(promise: Promise<T>): Promise<T> {
    const started = performance.now()
    let timer: ReturnType<typeof setTimeout> | undefined
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => {
          this.onExpire()
          reject(new Error('idle timeout'))
        },
        Math.max(0, this.left),
      )
    })
    promise.catch(() => {}) // the loser of the race must not surface as an unhandled rejection
    try {
      return await Promise.race([promise, expired])
    } finally {
      clearTimeout(timer)
      this.left -= performance.now() - started
    }
  }
}
