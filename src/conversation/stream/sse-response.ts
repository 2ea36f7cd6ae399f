// Answers an HTTP request with a turn log read as Server-Sent Events: frames
// are sent as they were encoded, a `: ping` comment fills every silence of
// keepaliveMs (from the first moment: a queued send gets its headers and pings
// at once), and a client going away only ends this subscription.

import { KEEPALIVE } from './encoding.ts'

/** A stream to answer with: a turn's log from an offset, following it live. */
export interface TurnStream {
  /** The stream's frames, in batches of those that arrived together (TurnLogStore.read). */
  read(signal: AbortSignal): AsyncGenerator<readonly string[]>
}

export const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const

export function sseResponse(stream: TurnStream, keepaliveMs: number): Response {
  const cancelled = new AbortController()
  let keepalive: ReturnType<typeof setInterval> | undefined
  let lastWrite = Date.now()
  // Bun's direct stream: each write goes to the response's sink as it is,
  // with no queue of chunks and no reader between them and the socket.
  const body = new ReadableStream({
    type: 'direct',
    async pull(controller) {
      const write = (text: string) => {
        lastWrite = Date.now()
        controller.write(text)
        controller.flush()
      }
      keepalive = setInterval(
        () => {
          if (Date.now() - lastWrite < keepaliveMs) return
          try {
            write(KEEPALIVE)
          } catch {
            // The response is gone (a timer's throw would be uncaught): end the read.
            cancelled.abort()
            clearInterval(keepalive)
          }
        },
        Math.max(10, Math.floor(keepaliveMs / 3)),
      )
      try {
        // Frames that arrived together leave in one write.
        for await (const frames of stream.read(cancelled.signal))
          write(frames.length === 1 ? (frames[0] as string) : frames.join(''))
        if (!cancelled.signal.aborted) controller.close()
      } catch {
        // The client went away while we wrote; the turn goes on without it.
      } finally {
        clearInterval(keepalive)
      }
    },
    cancel() {
      cancelled.abort()
      clearInterval(keepalive)
    },
  })
  return new Response(body, { headers: SSE_HEADERS })
}
