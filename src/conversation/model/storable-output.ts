// A model's output made storable (CONTRACT §3): a model server is input like
// any other, and may send a NUL character (no Postgres text or jsonb column
// holds U+0000) or a lone UTF-16 surrogate (not Unicode: the driver would
// store something else than was streamed). Each becomes U+FFFD, so the reply
// is stored exactly as it streamed instead of failing its final write - except
// a high surrogate that ends a chunk, which waits for the low one the next
// chunk may begin with (an emoji cut between two deltas stays whole). The
// replacement itself is storable-text.ts's, with the checks of what is storable.

import { REPLACEMENT, toStorableText } from '../../storable-text.ts'

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff

/** One stream of chunks made storable, chunk by chunk (a cut surrogate pair carried over). */
export class StorableStream {
  private carried = ''

  /** The storable text of the next chunk; may be empty. */
  push(chunk: string): string {
    let text = this.carried + chunk
    this.carried = ''
    if (isHighSurrogate(text.charCodeAt(text.length - 1))) {
      this.carried = text.slice(-1)
      text = text.slice(0, -1)
    }
    return text === '' ? '' : toStorableText(text)
  }

  /** What is left once the stream ended: a lone high surrogate, as U+FFFD. */
  end(): string {
    const left = this.carried === '' ? '' : REPLACEMENT
    this.carried = ''
    return left
  }
}
