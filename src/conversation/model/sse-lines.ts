// Server-Sent Events from a model server, as events: eventsource-parser (the
// WHATWG "event stream interpretation" rules - data/event fields, comments,
// all three line endings, input split anywhere) behind the two calls
// openai.ts makes. Beyond the rules: an event left unterminated at the end of
// the input is still delivered (see `end`), and an event or line longer than
// MAX_EVENT_CHARS fails the reply rather than grow memory without bound.
import { createParser, type EventSourceParser } from 'eventsource-parser'
import { ModelError } from './provider.ts'

/** The longest event (or unterminated line) a model server may send: far above any real delta. */
export const MAX_EVENT_CHARS = 1_048_576

export interface SseEvent {
  /** The `event:` field, or undefined when the server sent none. */
  event: string | undefined
  /** The `data:` lines of the event, joined with `\n`. */
  data: string
}

export class SseParser {
  private events: SseEvent[] = []
  private overflowed = false
  private readonly parser: EventSourceParser = createParser({
    maxBufferSize: MAX_EVENT_CHARS,
    onEvent: ({ event, data }) => {
      this.events.push({ event, data })
    },
    // Unknown fields and bad retry values are ignored, as the rules say.
    onError: (error) => {
      if (error.type === 'max-buffer-size-exceeded') this.overflowed = true
    },
  })

  /** Takes the next piece of decoded text; returns the events it completed. */
  feed(text: string): SseEvent[] {
    try {
      this.parser.feed(text)
    } catch (error) {
      if (!this.overflowed) throw error
    }
    if (this.overflowed)
      throw new ModelError(
        `The model server sent an event longer than ${MAX_EVENT_CHARS} characters.`,
      )
    return this.take()
  }

  /**
   * The input ended: the event it left unterminated, if any (a blank line
   * ends it; after a complete event the blank lines complete nothing).
   */
  end(): SseEvent[] {
    const last = this.feed('\n\n')
    this.parser.reset()
    return last
  }

  private take(): SseEvent[] {
    const taken = this.events
    this.events = []
    return taken
  }
}
