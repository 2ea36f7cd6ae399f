// Pure readers for the OpenAI chat-completions wire format: the body of a
// streamed chunk and the error bodies. Kept apart from the HTTP code so every
// shape that upstream servers (OpenAI, vLLM, Ollama, llama.cpp) send can be
// tested without a server, and so every detail shown to a user passes one filter.
import type { ContextMessage, ModelRequest } from './provider.ts'
import { ModelError } from './provider.ts'
import type { ToolCallDelta } from './tool-call-assembler.ts'

/** Upstream text shown to a user is cut to this many characters. */
const MAX_UPSTREAM_TEXT = 200

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * Makes upstream text safe to show: the API key is masked (some servers echo
 * the key they were given) and the text is cut to a readable length.
 */
export function safeText(text: string, apiKey: string | undefined): string {
  const masked = apiKey ? text.split(apiKey).join('***') : text
  const flat = masked.replace(/\s+/g, ' ').trim()
  const chars = Array.from(flat)
  return chars.length > MAX_UPSTREAM_TEXT ? `${chars.slice(0, MAX_UPSTREAM_TEXT).join('')}…` : flat
}

/**
 * The message of an error body: OpenAI's `{"error": {"message"}}`, or the
 * `{"error": "<text>"}` some compatible servers send. Undefined for anything else.
 */
export function upstreamErrorMessage(body: unknown): string | undefined {
  if (!isRecord(body)) return undefined
  const error = body.error
  if (typeof error === 'string' && error !== '') return error
  if (isRecord(error) && typeof error.message === 'string' && error.message !== '')
    return error.message
  return undefined
}

/** The detail for a non-2xx answer; `bodyText` is the raw body, JSON or not. */
export function statusErrorDetail(
  status: number,
  bodyText: string,
  apiKey: string | undefined,
): string {
  let message: string | undefined
  try {
    message = upstreamErrorMessage(JSON.parse(bodyText))
  } catch {
    // Not JSON (a proxy's HTML page, say): the status alone is the safe answer.
  }
  return message === undefined
    ? `The model server answered with status ${status}.`
    : `The model server answered with status ${status}: ${safeText(message, apiKey)}`
}

export interface ChunkPart {
  /** Text to append to the reply; undefined when this chunk carries none. */
  content: string | undefined
  /** Reasoning text (`reasoning_content` or `reasoning`); undefined when none. */
  reasoning: string | undefined
  /** Pieces of tool calls (tool-call-assembler.ts puts them together). */
  toolCalls: ToolCallDelta[]
  /** The chunk carried a `finish_reason`: the reply is complete. */
  finished: boolean
}

/** Reads the `data:` of one stream event (other than `[DONE]`); throws ModelError on bad or error data. */
export function readChunk(data: string, apiKey: string | undefined): ChunkPart {
  let body: unknown
  try {
    body = JSON.parse(data)
  } catch {
    throw new ModelError('The model server sent data that could not be read.')
  }
  if (!isRecord(body)) throw new ModelError('The model server sent data that could not be read.')
  if (body.error !== undefined && body.error !== null) {
    const message = upstreamErrorMessage(body)
    throw new ModelError(
      message === undefined
        ? 'The model server reported an error during the reply.'
        : `The model server reported an error during the reply: ${safeText(message, apiKey)}`,
    )
  }
  // A chunk with no choices (a usage summary, say) is valid and adds nothing.
  const choice = Array.isArray(body.choices) ? body.choices[0] : undefined
  if (!isRecord(choice))
    return { content: undefined, reasoning: undefined, toolCalls: [], finished: false }
  const delta = isRecord(choice.delta) ? choice.delta : {}
  const finished = typeof choice.finish_reason === 'string' && choice.finish_reason !== ''
  return {
    content: nonEmptyString(delta.content),
    // DeepSeek and older vLLM send `reasoning_content`; Ollama, OpenRouter and newer vLLM `reasoning`.
    reasoning: nonEmptyString(delta.reasoning_content) ?? nonEmptyString(delta.reasoning),
    toolCalls: Array.isArray(delta.tool_calls) ? delta.tool_calls.flatMap(toolCallDelta) : [],
    finished,
  }
}

const nonEmptyString = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined

/** One `tool_calls[]` entry; anything not shaped like one is dropped. */
function toolCallDelta(entry: unknown): ToolCallDelta[] {
  if (!isRecord(entry)) return []
  const fn = isRecord(entry.function) ? entry.function : {}
  const index = entry.index
  return [
    {
      index: Number.isSafeInteger(index) && (index as number) >= 0 ? (index as number) : undefined,
      id: nonEmptyString(entry.id),
      name: nonEmptyString(fn.name),
      // Some servers send the arguments as an object rather than JSON text.
      arguments:
        typeof fn.arguments === 'string'
          ? fn.arguments
          : isRecord(fn.arguments)
            ? JSON.stringify(fn.arguments)
            : undefined,
    },
  ]
}

/** A context message as the chat-completions API takes it. */
function wireMessage(message: ContextMessage): Record<string, unknown> {
  if (message.role === 'tool')
    return { role: 'tool', tool_call_id: message.toolCallId ?? '', content: message.content }
  if (message.role === 'assistant' && message.toolCalls?.length)
    return {
      role: 'assistant',
      // OpenAI takes null content beside tool calls; some servers refuse an empty string.
      content: message.content === '' ? null : message.content,
      tool_calls: message.toolCalls.map((call) => ({
        id: call.id,
        type: 'function',
        function: { name: call.name, arguments: call.arguments },
      })),
    }
  // A message with attachments sends its parts (images, documents' text) as its content.
  return { role: message.role, content: message.parts ?? message.content }
}

/** The `messages` and, when tools are offered, the `tools` of a request body. */
export function wireConversation(request: ModelRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { messages: request.messages.map(wireMessage) }
  if (request.tools?.length)
    body.tools = request.tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.parameters },
    }))
  return body
}
