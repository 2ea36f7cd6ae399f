// A reply as typed events from any ModelProvider, made storable: a provider
// with `events` (openai.ts) gives text, reasoning and tool calls; one without
// (local.ts) gives its text chunks as text events. Text and reasoning are two
// streams, each made storable on its own (a surrogate pair cut between two
// deltas of one stays whole); a tool call's name and arguments are storable
// text too, since both are stored and streamed (CONTRACT §21).

import { toStorableText } from '../../storable-text.ts'
import type { ModelEvent, ModelProvider, ModelRequest } from './provider.ts'
import { StorableStream } from './storable-output.ts'

/** The reply's events, in order, storable; no text or reasoning event is empty. */
export function modelEvents(
  provider: ModelProvider,
  request: ModelRequest,
): AsyncGenerator<ModelEvent> {
  return provider.events
    ? typedEvents(provider.events(request))
    : textEvents(provider.stream(request))
}

/**
 * A text-only model's chunks as text events, read directly (no generator in
 * between: a reply streams one of these per chunk).
 */
async function* textEvents(chunks: AsyncIterable<string>): AsyncGenerator<ModelEvent> {
  const text = new StorableStream()
  for await (const chunk of chunks) {
    const storable = text.push(chunk)
    if (storable !== '') yield { type: 'text', text: storable }
  }
  const left = text.end()
  if (left !== '') yield { type: 'text', text: left }
}

async function* typedEvents(events: AsyncIterable<ModelEvent>): AsyncGenerator<ModelEvent> {
  const text = new StorableStream()
  const reasoning = new StorableStream()
  for await (const event of events) {
    if (event.type === 'tool_call') {
      const { id, name, arguments: args } = event.call
      yield {
        type: 'tool_call',
        call: {
          id: toStorableText(id),
          name: toStorableText(name),
          arguments: toStorableText(args),
        },
      }
      continue
    }
    const storable = (event.type === 'text' ? text : reasoning).push(event.text)
    if (storable !== '') yield { type: event.type, text: storable }
  }
  const reasoningLeft = reasoning.end()
  if (reasoningLeft !== '') yield { type: 'reasoning', text: reasoningLeft }
  const textLeft = text.end()
  if (textLeft !== '') yield { type: 'text', text: textLeft }
}
