// The StopChannel port: a request to stop a conversation's running turn
// reaches every instance (the one that asks included), so whichever runs the
// turn stops it. Delivery is best effort and immediate: Redis pub/sub across
// instances (redis-stop-channel.ts), an in-process emitter otherwise
// (memory-stop-channel.ts).

export interface StopRequest {
  conversationId: string
  /** The assistant message of the turn to stop. */
  messageId: string
}

export interface StopChannel {
  /** Sends the request to every subscribed instance; resolves once it is sent. */
  publish(request: StopRequest): Promise<void>
  /** Calls listener for every request from now on, from any instance. */
  subscribe(listener: (request: StopRequest) => void): void
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
