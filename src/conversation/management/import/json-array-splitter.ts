// Cuts a JSON array that arrives in byte chunks into its elements, each as the
// bytes of one JSON value, so an import holds a bounded batch of conversations
// instead of the whole file. It follows only the array's own structure
// (strings, escapes, nesting); each element's text is then JSON.parse's to
// judge, and an element that is no conversation (a number, a string) is the
// importer's to skip. An element past the size given is not kept at all, only
// reported with its size. Bytes, not text: the structural characters are
// ASCII, which never occurs inside a multi-byte UTF-8 sequence, so a chunk may
// end anywhere.
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

/** One element of the array: its position and its bytes, or only its size when it was too large to keep. */
export type ArrayElement =
  | { index: number; bytes: Uint8Array; size: number }
  | { index: number; bytes: undefined; size: number }

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

/** What the element being read is: an object or array (nested), a string, or a bare word or number. */
type Kind = 'nested' | 'string' | 'scalar'

const notAnArray = () =>
  invalid('The file must be a JSON array of conversations (chatgpt.com’s conversations.json).')

/** A byte that ends a bare word or number (true, 12.5): what may follow it in the array. */
const endsScalar = (byte: number) => byte === COMMA || byte === CLOSE_BRACKET || isSpace(byte)

export class JsonArraySplitter {
  private place: Place = 'start'
  private kind: Kind = 'nested'
  private seen = 0
  private depth = 0
  private inString = false
  private escaped = false
  /** Bytes of the element being read, from earlier chunks (none once it is past the limit). */
  private parts: Uint8Array[] = []
  /** Bytes of the element being read so far. */
  private size = 0
  /** Bytes read before this chunk. */
  private consumed = 0

  /** @param maxElementBytes the largest element kept; a larger one is reported by its size alone. */
  constructor(private readonly maxElementBytes = Number.POSITIVE_INFINITY) {}

  /** How many elements have been completed. */
  get count(): number {
    return this.seen
  }

  /** Reads a chunk; answers the elements it completed. Throws `invalid` where the array breaks. */
  push(chunk: Uint8Array): ArrayElement[] {
    const done: ArrayElement[] = []
    let start = this.place === 'element' ? 0 : -1
    const finish = (end: number) => {
      done.push(this.take(chunk.subarray(start, end)))
      this.place = 'after'
      start = -1
    }
    for (let at = 0; at < chunk.length; at++) {
      const byte = chunk[at] as number
      if (this.place === 'element') {
        if (this.inString) {
          if (this.escaped) this.escaped = false
          else if (byte === BACKSLASH) this.escaped = true
          else if (byte === QUOTE) {
            this.inString = false
            if (this.kind === 'string') finish(at + 1)
          }
          continue
        }
        if (this.kind === 'scalar') {
          if (!endsScalar(byte)) continue
          finish(at)
          // The byte that ended it is the array's: read it again as such.
        } else {
          if (byte === QUOTE) this.inString = true
          else if (byte === OPEN_BRACE || byte === OPEN_BRACKET) this.depth++
          else if (byte === CLOSE_BRACE || byte === CLOSE_BRACKET) {
            this.depth--
            if (this.depth === 0) finish(at + 1)
          }
          continue
        }
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
          if (byte === CLOSE_BRACKET || byte === COMMA || byte === CLOSE_BRACE)
            throw invalid(
              `The file is not valid JSON: conversation [${this.seen}] is missing before "${String.fromCharCode(byte)}".`,
            )
          this.place = 'element'
          this.size = 0
          start = at
          if (byte === OPEN_BRACE || byte === OPEN_BRACKET) {
            this.kind = 'nested'
            this.depth = 1
          } else if (byte === QUOTE) {
            this.kind = 'string'
            this.inString = true
          } else this.kind = 'scalar'
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
    if (this.place === 'element') this.keep(chunk.subarray(Math.max(start, 0)))
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

  /** Keeps a piece of the element being read (a copy: the chunk is the caller's), up to the limit. */
  private keep(piece: Uint8Array): void {
    this.size += piece.length
    if (this.size > this.maxElementBytes) this.parts = []
    else this.parts.push(piece.slice())
  }

  /** The element completed by `last`: the earlier chunks' parts and this last piece. */
  private take(last: Uint8Array): ArrayElement {
    const index = this.seen++
    this.keep(last)
    const size = this.size
    const parts = this.parts
    this.parts = []
    if (size > this.maxElementBytes) return { index, bytes: undefined, size }
    if (parts.length === 1) return { index, bytes: parts[0] as Uint8Array, size }
    const bytes = new Uint8Array(size)
    let offset = 0
    for (const part of parts) {
      bytes.set(part, offset)
      offset += part.length
    }
    return { index, bytes, size }
  }
}
