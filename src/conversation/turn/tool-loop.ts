// The rounds of one reply (CONTRACT §21): the model streams text, reasoning
// and tool calls; when a round ends with calls, each is run through the
// ToolCatalogue (bounded by TOOL_TIMEOUT_MS and the turn's abort: a failure is
// an error result, never a throw) and the model is asked again with the calls
// and their results, at most `maxSteps` rounds with calls; the round after
// the last is offered no tools, so the model answers. What happens is yielded
// in stream order - the caller (lifecycle.ts) turns it into items and stores it;
// this module knows the model and the tools, not the log.
//
// Calls of one round run at once, and their results are yielded in call
// order: the stream reads call, result, call, result. A call whose turn was
// stopped is cancelled (its result says so) and no round follows.
import type { ToolCatalogue, ToolDefinition, ToolResult } from '../../tools/catalogue.ts'
import type { CatalogueModel } from '../model/catalogue.ts'
import { modelEvents } from '../model/model-events.ts'
import type { ContextMessage, ModelRequest, ToolCall } from '../model/provider.ts'

/** The tools a turn may use, and how many rounds of calls it may make. */
export interface TurnTools {
  catalogue: ToolCatalogue
  /** TOOL_MAX_STEPS. */
  maxSteps: number
}

export type ReplyEvent =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  /** A call is about to run; `result` follows before the next call. */
  | { type: 'tool_call'; call: ToolCall }
  | { type: 'tool_result'; call: ToolCall; result: ToolResult }

export interface ReplyRounds {
  model: CatalogueModel
  request: Omit<ModelRequest, 'signal'>
  userId: string
  signal: AbortSignal
  /** Absent, or the model takes none: one round of text and reasoning. */
  tools?: TurnTools
  warn: (message: string, error: unknown) => void
}

/** The offered tools, or none when the catalogue could not list them (the turn goes on without). */
async function offeredTools(
  tools: TurnTools,
  warn: ReplyRounds['warn'],
): Promise<ToolDefinition[]> {
  try {
    return await tools.catalogue.list()
  } catch (error) {
    warn('the tools could not be listed; the turn goes on without them', error)
    return []
  }
}

/**
 * The reply's events. Without tools, the model's own (one round, read
 * directly: a reply streams one event per chunk, and a generator in between
 * costs each of them).
 */
export function replyEvents(rounds: ReplyRounds): AsyncIterable<ReplyEvent> {
  const { model } = rounds
  const tools = model.tools && rounds.tools ? rounds.tools : undefined
  if (!tools) return modelEvents(model.provider, { ...rounds.request, signal: rounds.signal })
  return toolRounds(rounds, tools)
}

async function* toolRounds(rounds: ReplyRounds, tools: TurnTools): AsyncGenerator<ReplyEvent> {
  const { model, signal } = rounds
  const offered = await offeredTools(tools, rounds.warn)
  const messages: ContextMessage[] = [...rounds.request.messages]
  for (let round = 0; ; round++) {
    const offering = offered.length > 0 && round < tools.maxSteps
    const calls: ToolCall[] = []
    let text = ''
    const request: ModelRequest = { ...rounds.request, messages, signal }
    if (offering) request.tools = offered
    const events = modelEvents(model.provider, request)
    for await (const event of events) {
      if (signal.aborted) return
      if (event.type === 'tool_call') {
        // A call to tools the round did not offer is not run.
        if (offering) calls.push(event.call)
        continue
      }
      if (event.type === 'text') text += event.text
      yield event
    }
    if (calls.length === 0 || signal.aborted) return
    // Every call of the round starts now; results are read in call order.
    const context = { userId: rounds.userId, signal }
    const running = calls.map((call) => tools.catalogue.call(call.name, call.arguments, context))
    messages.push({ role: 'assistant', content: text, toolCalls: calls })
    for (const [index, call] of calls.entries()) {
      yield { type: 'tool_call', call }
      const result = await (running[index] as Promise<ToolResult>)
      yield { type: 'tool_result', call, result }
      messages.push({ role: 'tool', content: result.text, toolCallId: call.id })
    }
    if (signal.aborted) return
  }
}
