// Reads an upload's body with a byte limit, refusing it as soon as it passes
// the limit instead of buffering whatever a client sends.
import { tooLarge } from '../errors.ts'

/** The stream's bytes; `too_large` (413) once more than maxBytes have come. */
export async function readLimitedBytes(
  body: ReadableStream<Uint8Array> | null,
  maxBytes: number,
  refusal: string,
): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0)
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel().catch(() => {})
      throw tooLarge(refusal)
    }
    chunks.push(value)
  }
  return new Uint8Array(Buffer.concat(chunks))
}
