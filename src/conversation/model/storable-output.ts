// A model's output made storable (CONTRACT §3): a model server is input like
// any other, and may send a NUL character (no Postgres text or jsonb column
// holds U+0000) or a lone UTF-16 surrogate (not Unicode: the driver would
// store something else than was streamed). Each becomes U+FFFD, so the reply
// is stored exactly as it streamed instead of failing its final write - except
// a high surrogate that ends a chunk, which waits for the low one the next
// chunk may begin with (an emoji cut between two deltas stays whole).

const REPLACEMENT = '\uFFFD'

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff

/** The text with every NUL and lone surrogate as U+FFFD. */
export function storableText(text: string): string {
  const wellFormed = text.isWellFormed() ? text : text.toWellFormed()
  return wellFormed.includes('\u0000') ? wellFormed.replaceAll('\u0000', REPLACEMENT) : wellFormed
}

/** The chunks of a model's reply, storable, in order; none empty. */
export async function* storableChunks(chunks: AsyncIterable<string>): AsyncGenerator<string> {
  let carried = ''
  for await (const chunk of chunks) {
    let text = carried + chunk
    carried = ''
    if (isHighSurrogate(text.charCodeAt(text.length - 1))) {
      carried = text.slice(-1)
      text = text.slice(0, -1)
    }
    if (text !== '') yield storableText(text)
  }
  if (carried !== '') yield REPLACEMENT
}
