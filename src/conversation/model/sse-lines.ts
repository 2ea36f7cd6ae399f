// A small incremental Server-Sent Events parser for reading model streams.
// `eventsource-parser` does the same job well, but the project keeps its
// dependencies few and the part needed here (data/event fields, comments, all
// three line endings, input split anywhere) is short. Follows the WHATWG
// "event stream interpretation" rules, except that an event left unterminated
// at the end of the input is still delivered (see `end`).

export interface SseEvent {
  /** The `event:` field, or undefined when the server sent none. */
  event: string | undefined
  /** The `data:` lines of the event, joined with `\n`. */
  data: string
}

export class SseParser {
  /** An incomplete line carried over to the next `feed`. */
  private pending = ''
  /** The last input ended in `\r`: a `\n` at the start of the next one ends the same line. */
  private skipLineFeed = false
  private data: string[] = []
  private event: string | undefined

  /** Takes the next piece of decoded text; returns the events it completed. */
  feed(text: string): SseEvent[] {
    const events: SseEvent[] = []
    if (text === '') return events
    let input = text
    if (this.skipLineFeed) {
      this.skipLineFeed = false
      if (input.startsWith('\n')) input = input.slice(1)
    }
    const buffer = this.pending + input
    let start = 0
    for (let i = 0; i < buffer.length; i++) {
      const code = buffer.charCodeAt(i)
      if (code !== 10 && code !== 13) continue
      this.line(buffer.slice(start, i), events)
      if (code === 13) {
        // `\r\n` is one line ending; a `\r` at the very end may be followed by `\n` later.
        if (i + 1 === buffer.length) this.skipLineFeed = true
        else if (buffer.charCodeAt(i + 1) === 10) i++
      }
      start = i + 1
    }
    this.pending = buffer.slice(start)
    return events
  }

  /**
   * Ends the input. Servers that close right after their last `data:` line,
   * without the blank line, still mean that event, so it is delivered.
   */
  end(): SseEvent[] {
    const events: SseEvent[] = []
    if (this.pending !== '') this.line(this.pending, events)
    this.pending = ''
    this.skipLineFeed = false
    this.line('', events)
    return events
  }

  private line(line: string, events: SseEvent[]): void {
    if (line === '') {
      if (this.data.length > 0) events.push({ event: this.event, data: this.data.join('\n') })
      this.data = []
      this.event = undefined
      return
    }
    if (line.startsWith(':')) return // a comment, e.g. a keep-alive `: ping`
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'data') this.data.push(value)
    else if (field === 'event') this.event = value
    // `id` and `retry` only matter to reconnecting clients; a model stream is never resumed.
  }
}
