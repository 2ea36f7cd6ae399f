// The model stream parser (sse-lines.ts): eventsource-parser under the rules
// openai.ts relies on - events whatever the cut and line ending, comments and
// unknown fields ignored, an unterminated last event delivered at the end -
// and a hostile upstream's endless event refused.
import { describe, expect, test } from 'bun:test'
import { ModelError } from '../../src/conversation/model/provider.ts'
import {
  MAX_EVENT_CHARS,
  type SseEvent,
  SseParser,
} from '../../src/conversation/model/sse-lines.ts'

/** Feeds `text` cut at every position in `cuts`, then ends the input. */
function parse(text: string, cuts: number[] = []): SseEvent[] {
  const parser = new SseParser()
  const events: SseEvent[] = []
  let start = 0
  for (const cut of [...cuts, text.length]) {
    events.push(...parser.feed(text.slice(start, cut)))
    start = cut
  }
  events.push(...parser.end())
  return events
}

const data = (value: string, event?: string): SseEvent => ({ event, data: value })

describe('SseParser', () => {
  test('several events in one piece', () => {
    expect(parse('data: a\n\ndata: b\n\ndata: [DONE]\n\n')).toEqual([
      data('a'),
      data('b'),
      data('[DONE]'),
    ])
  })

  test('events are delivered as soon as their blank line arrives', () => {
    const parser = new SseParser()
    expect(parser.feed('data: a\n')).toEqual([])
    expect(parser.feed('\ndata: b')).toEqual([data('a')])
    expect(parser.feed('\n\n')).toEqual([data('b')])
    expect(parser.end()).toEqual([])
  })

  test('the same events whatever the cut, for every line ending', () => {
    for (const ending of ['\n', '\r\n', '\r']) {
      const text = ['data: {"x":1}', '', ': comment', 'event: error', 'data: two', '', ''].join(
        ending,
      )
      const expected = [data('{"x":1}'), data('two', 'error')]
      for (let i = 0; i <= text.length; i++) {
        for (let j = i; j <= text.length; j += 3) expect(parse(text, [i, j])).toEqual(expected)
      }
    }
  })

  test('a \\r\\n split across pieces is one line ending, not two', () => {
    const parser = new SseParser()
    expect(parser.feed('data: a\r')).toEqual([])
    expect(parser.feed('')).toEqual([])
    expect(parser.feed('\ndata: b\r\n\r\n')).toEqual([data('a\nb')])
  })

  test('comments and unknown fields are ignored', () => {
    expect(parse(': ping\n\nid: 7\nretry: 10\nfoo: bar\ndata: x\n\n: ping\n\n')).toEqual([
      data('x'),
    ])
  })

  test('field syntax: one optional space after the colon; no colon means an empty value', () => {
    expect(parse('data:a\n\ndata:  b\n\ndata\n\n')).toEqual([data('a'), data(' b'), data('')])
  })

  test('multi-line data joins with \\n', () => {
    expect(parse('data: one\ndata: two\n\n')).toEqual([data('one\ntwo')])
  })

  test('an event with no data is not delivered, and its name does not leak', () => {
    expect(parse('event: ping\n\ndata: x\n\n')).toEqual([data('x')])
  })

  test('an unterminated last event is delivered at the end', () => {
    expect(parse('data: a\n\ndata: [DONE]')).toEqual([data('a'), data('[DONE]')])
    expect(parse('data: a\n\ndata: [DONE]\n')).toEqual([data('a'), data('[DONE]')])
  })

  test('an event past MAX_EVENT_CHARS fails the reply, in one piece or cut anywhere; below it passes', () => {
    const long = 'x'.repeat(MAX_EVENT_CHARS / 2)
    expect(parse(`data: ${long}\n\n`)).toEqual([data(long)])
    const hostile = `data: ${'x'.repeat(MAX_EVENT_CHARS + 1)}`
    for (const size of [hostile.length, 65_536, 1_000]) {
      const parser = new SseParser()
      let failure: unknown
      try {
        for (let start = 0; start < hostile.length; start += size)
          parser.feed(hostile.slice(start, start + size))
      } catch (error) {
        failure = error
      }
      expect(failure).toBeInstanceOf(ModelError)
      expect((failure as ModelError).detail).toContain('longer than')
    }
    // Many data lines of one event count together.
    const lines = `${'data: yyyyyyyy\n'.repeat(MAX_EVENT_CHARS / 8)}\n`
    expect(() => new SseParser().feed(lines)).toThrow(ModelError)
  })
})
