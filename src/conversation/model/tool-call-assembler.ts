// Tool calls assembled from an OpenAI-compatible stream's deltas. A server
// sends a call in pieces: the first delta of a call carries its `index`, `id`
// and function `name`, the next ones only pieces of the `arguments` JSON text;
// several calls of one round interleave by `index` (parallel tool calls).
// Some servers (Ollama, some proxies) send whole calls, or omit `index`: a
// delta without one continues the last call unless it brings a new id.
import type { ToolCall } from './provider.ts'

/** One `tool_calls[]` entry of a streamed delta, as read from the wire. */
export interface ToolCallDelta {
  index?: number
  id?: string
  name?: string
  arguments?: string
}

/** The most calls one round may carry: a bound on what a hostile server can make us hold. */
export const MAX_TOOL_CALLS_PER_ROUND = 64
/** The longest arguments text of one call; longer fails the reply rather than grow memory. */
export const MAX_TOOL_ARGUMENTS_CHARS = 1_048_576

export class ToolCallAssembler {
  private readonly calls = new Map<number, { id?: string; name: string; arguments: string }>()
  private lastIndex: number | undefined

  /** Adds one delta; throws a RangeError past the bounds above. */
  add(delta: ToolCallDelta): void {
    const index = this.indexOf(delta)
    let call = this.calls.get(index)
    if (call === undefined) {
      if (this.calls.size >= MAX_TOOL_CALLS_PER_ROUND)
        throw new RangeError(`more than ${MAX_TOOL_CALLS_PER_ROUND} tool calls in one round`)
      call = { name: '', arguments: '' }
      this.calls.set(index, call)
    }
    this.lastIndex = index
    if (delta.id) call.id ??= delta.id
    // A name arrives whole in a call's first delta; a server that repeats it must not double it.
    if (delta.name) call.name ||= delta.name
    if (delta.arguments) {
      call.arguments += delta.arguments
      if (call.arguments.length > MAX_TOOL_ARGUMENTS_CHARS)
        throw new RangeError(
          `tool call arguments longer than ${MAX_TOOL_ARGUMENTS_CHARS} characters`,
        )
    }
  }

  /** The complete calls in index order; ids made up for calls that came without one. */
  finish(): ToolCall[] {
    return [...this.calls.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, call]) => ({
        id: call.id ?? `call_${index}`,
        name: call.name,
        arguments: call.arguments,
      }))
  }

  private indexOf(delta: ToolCallDelta): number {
    if (delta.index !== undefined) return delta.index
    if (this.lastIndex === undefined) return 0
    const last = this.calls.get(this.lastIndex)
    const isNew = delta.id !== undefined && last?.id !== undefined && last.id !== delta.id
    return isNew ? Math.max(...this.calls.keys()) + 1 : this.lastIndex
  }
}
