// The ConversationLeases port: at most one instance at a time runs the turns
// of a conversation. A lease expires unless renewed, so the turns of an
// instance that died are taken over; each grant carries a fencing token,
// larger than every token granted before for the conversation (and, as far as
// clocks agree, across conversations, processes and restarts of the store:
// tokens are clock-seeded microseconds), so storage can refuse writes from a
// holder that lost its lease. Adapters:
// memory-leases.ts (in-process) and redis-leases.ts (shared by every instance).

export interface Lease {
  conversationId: string
  /** Fencing token of this grant. */
  token: number
}

export interface ConversationLeases {
  /**
   * A new lease when nobody holds one on the conversation, else undefined;
   * then the holder's release() reports that the lease was wanted.
   */
  acquire(conversationId: string, ttlMs: number): Promise<Lease | undefined>
  /** Extends a lease still held by this grant; false when it was lost (expired or taken). */
  renew(lease: Lease, ttlMs: number): Promise<boolean>
  /**
   * Gives up a lease if this grant still holds it (a no-op otherwise).
   * Resolves true when an acquire was refused while this grant held it: the
   * one who asked may have queued work and left it to the holder, so the
   * holder looks again rather than everyone looking every time.
   */
  release(lease: Lease): Promise<boolean>
  /** Whether anyone holds a live lease on the conversation. */
  isHeld(conversationId: string): Promise<boolean>
  close(): Promise<void>
}
