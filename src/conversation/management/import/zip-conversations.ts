// Reads conversations.json out of a chatgpt.com data export zip as the zip
// arrives (fflate's streaming Unzip), so neither the zip nor the file is held
// whole. Only the first entry named `conversations.json` (at the top, or in
// one top folder) is decompressed; every other entry is skipped unread (a
// decoder that drops it, so nothing is inflated or buffered). The file's
// decompressed size counts against the import limit as it grows, and input
// is fed in small slices, so a zip bomb is stopped after at most a slice's
// worth of output (deflate expands at most about 1,000 times).
import {
  type AsyncFlateStreamHandler,
  Unzip,
  type UnzipDecoder,
  type UnzipFile,
  UnzipInflate,
  UnzipPassThrough,
} from 'fflate'
import { invalid, tooLarge } from '../../../errors.ts'

/** Bytes pushed into the unzipper at a time: bounds what one push may inflate to. */
const SLICE_BYTES = 16 * 1024

const EMPTY = new Uint8Array(0)

/** `conversations.json`, or `<folder>/conversations.json` with an ordinary folder name. */
export function isConversationsEntry(name: string): boolean {
  if (name === 'conversations.json') return true
  const match = /^([^/\\]+)\/conversations\.json$/.exec(name)
  return match !== null && match[1] !== '.' && match[1] !== '..'
}

const damaged = () => invalid('The zip is damaged or cut short.')
const unreadable = () =>
  invalid(
    'conversations.json in the zip is damaged or compressed in a way this service cannot read.',
  )

/**
 * A decoder for one compression method that decompresses the entry being
 * extracted and drops every other entry's bytes. Which one is being extracted
 * is decided just before its start(), which constructs the decoder. Exported
 * for tests.
 */
export function selectiveDecoder(
  Inner: typeof UnzipInflate | typeof UnzipPassThrough,
  extracting: () => boolean,
) {
  return class SelectiveDecoder implements UnzipDecoder {
    static compression = Inner.compression
    ondata: AsyncFlateStreamHandler = () => {}
    private readonly inner: UnzipDecoder | undefined

    constructor() {
      if (!extracting()) return
      const inner = new Inner()
      inner.ondata = (error, data, final) => this.ondata(error, data, final)
      this.inner = inner
    }

    push(chunk: Uint8Array, final: boolean): void {
      if (this.inner) this.inner.push(chunk, final)
      else if (final) this.ondata(null, EMPTY, true)
    }
  }
}

/** The bytes of the zip's conversations.json, as the zip's bytes arrive; throws §3 errors. */
export async function* conversationsFromZip(
  zip: AsyncIterable<Uint8Array>,
  maxBytes: number,
): AsyncGenerator<Uint8Array> {
  const out: Uint8Array[] = []
  let chosen = false
  let extracting = false
  let finished = false
  let size = 0
  let failure: Error | undefined

  const unzip = new Unzip((file: UnzipFile) => {
    extracting = !chosen && isConversationsEntry(file.name)
    if (!extracting) {
      file.ondata = () => {}
      try {
        file.start()
      } catch {
        // A compression method fflate lacks: an entry this import does not read anyway.
      }
      return
    }
    chosen = true
    file.ondata = (error, data, final) => {
      if (error) {
        failure ??= unreadable()
        return
      }
      size += data.length
      if (size > maxBytes) {
        failure ??= tooLarge(`conversations.json in the zip is larger than ${maxBytes} bytes.`)
        return
      }
      if (data.length > 0) out.push(data)
      if (final) finished = true
    }
    try {
      file.start()
    } catch {
      failure ??= unreadable()
    }
    extracting = false
  })
  unzip.register(selectiveDecoder(UnzipPassThrough, () => extracting))
  unzip.register(selectiveDecoder(UnzipInflate, () => extracting))

  const push = (bytes: Uint8Array, final: boolean) => {
    try {
      unzip.push(bytes, final)
    } catch {
      failure ??= damaged()
    }
    if (failure) throw failure
  }

  for await (const chunk of zip) {
    for (let at = 0; at < chunk.length && !finished; at += SLICE_BYTES) {
      push(chunk.subarray(at, at + SLICE_BYTES), false)
      yield* out.splice(0)
    }
    // The rest of the zip is not needed: stop reading it.
    if (finished) return
  }
  push(EMPTY, true)
  yield* out.splice(0)
  if (!chosen)
    throw invalid('The zip holds no conversations.json (chatgpt.com’s data export has one).')
  if (!finished) throw damaged()
}
