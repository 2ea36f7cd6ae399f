// The StopChannel port: a request to stop a conversation's running turn
// reaches the instance running it (the one that asks included), so it stops
// it. Delivery is immediate and at least once for the conversations an
// instance watches: Redis pub/sub across instances plus a durable flag read
// while watched, so a lost message loses no stop (redis-stop-channel.ts), an
// in-process emitter otherwise (memory-stop-channel.ts).

export interface StopRequest {
  conversationId: string
  /** The assistant message of the turn to stop. */
  messageId: string
}

export interface StopChannel {
  /** Sends the request to every subscribed instance; resolves once it is sent. */
  publish(request: StopRequest): Promise<void>
  /**
   * Calls listener for every request from now on, from any instance (on a
   * Redis Cluster, where stops travel by the conversation's shard: for the
   * conversations this instance watches). A request may come more than once.
   */
  subscribe(listener: (request: StopRequest) => void): void
  /**
   * Makes sure the listeners hear of stops for this conversation while it is
   * watched (a runner watches the conversations it runs), even when a
   * message is lost on the way; returns the unwatch.
   */
  watch(conversationId: string): () => void
  close(): Promise<void>
}

/** Told when a listener throws (the service passes its logger's warn). */
export type ListenerErrorReport = (message: string, error: unknown) => void

/** Calls a listener; one that throws is reported and must not keep the request from the others. */
export function deliver(
  listener: (request: StopRequest) => void,
  request: StopRequest,
  report: ListenerErrorReport = () => {},
): void {
  try {
    listener(request)
  } catch (error) {
    report('stop listener failed', error)
  }
}
