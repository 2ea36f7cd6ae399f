// Cuts a JSON array that arrives in byte chunks into its elements, each as the
// bytes of one JSON object, so an import holds one conversation at a time
// instead of the whole file. It follows only the array's own structure
// (strings, escapes, nesting); each element's text is then JSON.parse's to
// judge. Bytes, not text: the structural characters are ASCII, which never
// occurs inside a multi-byte UTF-8 sequence, so a chunk may end anywhere.
import { invalid } from '../../../errors.ts'

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const BOM = [0xef, 0xbb, 0xbf]

const isSpace = (byte: number) => byte === 0x20 || byte === 0x0a || byte === 0x0d || byte === 0x09

/** One element of the array: its position and its bytes. */
export interface ArrayElement {
  index: number
  bytes: Uint8Array
}

type Place =
  /** Before the `[` (a UTF-8 byte order mark may come first). */
  | 'start'
  /** After `[`: an element or `]`. */
  | 'first'
  /** Inside an element. */
  | 'element'
  /** After an element: `,` or `]`. */
  | 'after'
  /** After `,`: an element. */
  | 'next'
  /** After `]`: only white space. */
  | 'end'

const notAnArray = () =>
  invalid('The file must be a JSON array of conversations (chatgpt.com’s conversations.json).')
const notAnObject = (index: number) =>
  invalid(`The file is not valid: "[${index}]" must be a conversation object.`)

export class JsonArraySplitter {
  private place: Place = 'start'
  private seen = 0
  private depth = 0
  private inString = false
  private escaped = false
  /** Bytes of the element being read, from earlier chunks. */
  private parts: Uint8Array[] = []
  /** Bytes read before this chunk. */
  private consumed = 0

  /** How many elements have been completed. */
  get count(): number {
    return this.seen
  }

  /** Reads a chunk; answers the elements it completed. Throws `invalid` where the array breaks. */
  push(chunk: Uint8Array): ArrayElement[] {
    const done: ArrayElement[] = []
    let start = this.place === 'element' ? 0 : -1
    for (let at = 0; at < chunk.length; at++) {
      const byte = chunk[at] as number
      if (this.place === 'element') {
        if (this.inString) {
          if (this.escaped) this.escaped = false
          else if (byte === BACKSLASH) this.escaped = true
          else if (byte === QUOTE) this.inString = false
          continue
        }
        if (byte === QUOTE) this.inString = true
        else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) this.depth++
        else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
          this.depth--
          if (this.depth === 0) {
            done.push({ index: this.seen++, bytes: this.take(chunk.subarray(start, at + 1)) })
            this.place = 'after'
            start = -1
          }
        }
        continue
      }
      if (isSpace(byte)) continue
      switch (this.place) {
        case 'start':
          // A byte order mark, byte by byte, only at the very start of the file.
          if (this.consumed + at < 3 && byte === BOM[this.consumed + at]) continue
          if (byte !== OPEN_BRACKET) throw notAnArray()
          this.place = 'first'
          break
        case 'first':
        case 'next':
          if (byte === CLOSE_BRACKET && this.place === 'first') {
            this.place = 'end'
            break
          }
          if (byte !== OPEN_BRACE) throw notAnObject(this.seen)
          this.place = 'element'
          this.depth = 1
          start = at
          break
        case 'after':
          if (byte === COMMA) this.place = 'next'
          else if (byte === CLOSE_BRACKET) this.place = 'end'
          else
            throw invalid(
              `The file is not valid JSON: "," or "]" must follow conversation [${this.seen - 1}].`,
            )
          break
        case 'end':
          throw invalid('The file is not valid JSON: there is text after the array.')
      }
    }
    if (this.place === 'element') this.parts.push(chunk.slice(Math.max(start, 0)))
    this.consumed += chunk.length
    return done
  }

  /** Checks the array was closed; throws `invalid` for a file that ends early. */
  end(): void {
    if (this.place === 'end') return
    if (this.place === 'element')
      throw invalid(`The file ends inside conversation [${this.seen}]: it is cut short.`)
    if (this.place === 'start') throw notAnArray()
    throw invalid('The file ends before its array is closed: it is cut short.')
  }

  /** The element's bytes: the earlier chunks' parts and this last piece. */
  private take(last: Uint8Array): Uint8Array {
    if (this.parts.length === 0) return last.slice()
    const parts = [...this.parts, last]
    this.parts = []
    const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
    let offset = 0
    for (const part of parts) {
      bytes.set(part, offset)
      offset += part.length
    }
    return bytes
  }
}
