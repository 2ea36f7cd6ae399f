// A reply as typed events from any ModelProvider, made storable: a provider
// with `events` (openai.ts) gives text, reasoning and tool calls; one without
// (local.ts) gives its text chunks as text events. Text and reasoning are two
// streams, each made storable on its own (a surrogate pair cut between two
// deltas of one stays whole); a tool call's name and arguments are storable
// text too, since both are stored and streamed (CONTRACT §21).
import type { ModelEvent, ModelProvider, ModelRequest } from './provider.ts'
import { StorableStream, storableText } from './storable-output.ts'

async function* textEvents(chunks: AsyncIterable<string>): AsyncGenerator<ModelEvent> {
  for await (const text of chunks) yield { type: 'text', text }
}

/** The reply's events, in order, storable; no text or reasoning event is empty. */
export async function* modelEvents(
  provider: ModelProvider,
  request: ModelRequest,
): AsyncGenerator<ModelEvent> {
  const events = provider.events?.(request) ?? textEvents(provider.stream(request))
  const text = new StorableStream()
  const reasoning = new StorableStream()
  for await (const event of events) {
    if (event.type === 'tool_call') {
      const { id, name, arguments: args } = event.call
      yield {
        type: 'tool_call',
        call: { id: storableText(id), name: storableText(name), arguments: storableText(args) },
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
