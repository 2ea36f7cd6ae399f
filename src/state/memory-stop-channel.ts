// In-process StopChannel adapter: stop requests reach the listeners of this
// channel only, for the embedded (single-process) setup and tests. Delivery
// is deferred to a microtask, as over Redis it is asynchronous too, so a
// listener never runs inside the publisher's call stack.
import {
  deliver,
  type ListenerErrorReport,
  type StopChannel,
  type StopRequest,
} from './stop-channel.ts'

/** A stop channel whose publish reaches this instance's listeners only. */
export function createMemoryStopChannel(report?: ListenerErrorReport): StopChannel {
  const listeners = new Set<(request: StopRequest) => void>()
  let closed = false

  return {
    async publish(request) {
      if (closed) throw new Error('stop channel is closed')
      const copy: StopRequest = {
        conversationId: request.conversationId,
        messageId: request.messageId,
      }
      queueMicrotask(() => {
        for (const listener of [...listeners]) {
          if (closed) return
          deliver(listener, copy, report)
        }
      })
    },
    subscribe(listener) {
      if (!closed) listeners.add(listener)
    },
    // Nothing is lost in process: every request reaches every listener.
    watch: () => () => {},
    async close() {
      closed = true
      listeners.clear()
    },
  }
}
