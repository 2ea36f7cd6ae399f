// The snippet a search result shows (CONTRACT §11): the text around the first
// place the query occurs, on one line, cut at whole characters, with `…`
// where text was left out.

const BEFORE = 40
const LENGTH = 160

/** A window of `text` around the first case-insensitive occurrence of `query`. */
export function snippetOf(text: string, query: string): string {
  const at = text.search(new RegExp(RegExp.escape(query), 'iu'))
  const chars = Array.from(text)
  // The hit's position in characters (a search that finds nothing starts at the top).
  const hit = at < 0 ? 0 : Array.from(text.slice(0, at)).length
  const end = Math.min(chars.length, Math.max(hit - BEFORE, 0) + LENGTH)
  const start = Math.max(0, end - LENGTH)
  const window = chars.slice(start, end).join('').replace(/\s+/g, ' ')
  return `${start > 0 ? '…' : ''}${window}${end < chars.length ? '…' : ''}`
}
