// The bytes of an import's conversations.json as they arrive (CONTRACT §17):
// the request body itself, or the file inside it when the body is a zip (a
// chatgpt.com data export, told apart by its first bytes). The body is
// refused with a 413 as soon as it passes the configured size, and so is a
// zipped file that decompresses past it.
import { tooLarge } from '../../../errors.ts'
import { conversationsFromZip } from './zip-conversations.ts'

/** Every zip starts with "PK" (a local file header, or the end record of an empty zip). */
const isZipStart = (bytes: Uint8Array) => bytes[0] === 0x50 && bytes[1] === 0x4b

const bodyTooLarge = (maxBytes: number) =>
  tooLarge(`The file is larger than ${maxBytes} bytes (IMPORT_MAX_BYTES).`)

/** The request body's bytes; throws `too_large` once they pass maxBytes, and stops reading. */
export async function* bodyBytes(request: Request, maxBytes: number): AsyncGenerator<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? 0)
  if (declared > maxBytes) throw bodyTooLarge(maxBytes)
  if (!request.body) return
  const reader = request.body.getReader()
  let size = 0
  let done = false
  try {
    for (;;) {
      const read = await reader.read()
      if (read.done) {
        done = true
        return
      }
      size += read.value.byteLength
      if (size > maxBytes) throw bodyTooLarge(maxBytes)
      yield read.value
    }
  } finally {
    if (!done) await reader.cancel().catch(() => {})
  }
}

/** The bytes of conversations.json: `body` as it is, or the file inside it when it is a zip. */
export async function* conversationsJsonBytes(
  body: AsyncIterable<Uint8Array>,
  maxBytes: number,
): AsyncGenerator<Uint8Array> {
  const iterator = body[Symbol.asyncIterator]()
  try {
    // Enough of the start to tell a zip from JSON (chunks may be a byte long).
    const head: Uint8Array[] = []
    let length = 0
    while (length < 2) {
      const next = await iterator.next()
      if (next.done) break
      head.push(next.value)
      length += next.value.byteLength
    }
    async function* all(): AsyncGenerator<Uint8Array> {
      yield* head
      for (;;) {
        const next = await iterator.next()
        if (next.done) return
        yield next.value
      }
    }
    const first = head.length === 1 ? (head[0] as Uint8Array) : Buffer.concat(head)
    if (isZipStart(first)) yield* conversationsFromZip(all(), maxBytes)
    else yield* all()
  } finally {
    await iterator.return?.()
  }
}
