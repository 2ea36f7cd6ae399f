// An in-process SSE response read as it arrives, as the items a client has
// received so far: whole items only (one still arriving is left out), so a
// test can act at a point of a stream - after the first append item, say -
// and then read on to the end.
import { expect } from 'bun:test'
import { type Frame, framesOf } from './conversation-app.ts'
import { reading } from './server-process.ts'

export interface SseReader {
  /** The whole items received so far. */
  frames(): Frame[]
  /** Reads until `enough` holds for the items received; fails, naming `what`, if the stream ends first. */
  until(enough: (frames: Frame[]) => boolean, what?: string): Promise<Frame[]>
  /** Reads to the end: the whole body. */
  rest(): Promise<string>
}

/** Reads a 200 SSE response (asserted) as it arrives. */
export function sseReader(response: Response): SseReader {
  expect(response.status).toBe(200)
  const body = reading(response)
  const frames = () => {
    const text = body.text()
    const end = text.lastIndexOf('\n\n')
    return end < 0 ? [] : framesOf(text.slice(0, end + 2))
  }
  return {
    frames,
    async until(enough, what = 'the items awaited') {
      await body.until(() => enough(frames()))
      if (!enough(frames())) throw new Error(`the stream ended before ${what}`)
      return frames()
    },
    rest: () => body.until(() => false),
  }
}
