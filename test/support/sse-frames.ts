// Reading SSE bodies as the frames a client received: whole items only (a
// frame cut off at the end of what was read so far is left out), comments
// (`: ping`) dropped, each frame kept byte for byte.

/** The complete item frames in text, each with its trailing blank line. */
export function completeFrames(text: string): string[] {
  const parts = text.split('\n\n')
  parts.pop() // after the last separator: empty, or a frame still arriving
  return parts.filter((part) => part !== '' && !part.startsWith(':')).map((part) => `${part}\n\n`)
}

/** The JSON data of a frame (not for `[DONE]`). */
export function frameData<T = Record<string, unknown>>(frame: string | undefined): T {
  const line = frame?.split('\n').find((l) => l.startsWith('data: '))
  if (line === undefined) throw new Error(`no data line in ${JSON.stringify(frame)}`)
  return JSON.parse(line.slice('data: '.length)) as T
}
