// Pure readers for the OpenAI chat-completions wire format: the body of a
// streamed chunk and the error bodies. Kept apart from the HTTP code so every
// shape that upstream servers (OpenAI, vLLM, Ollama, llama.cpp) send can be
// tested without a server, and so every detail shown to a user passes one filter.
import { type ContentPart, type ContextMessage, ModelError } from './provider.ts'

/** The `messages` of a chat-completions request: a message with parts sends them as its content. */
export function wireMessages(
  messages: readonly ContextMessage[],
): { role: ContextMessage['role']; content: string | ContentPart[] }[] {
  return messages.map(({ role, content, parts }) => ({ role, content: parts ?? content }))
}

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
  if (!isRecord(choice)) return { content: undefined, finished: false }
  const delta = choice.delta
  const content = isRecord(delta) && typeof delta.content === 'string' ? delta.content : undefined
  const finished = typeof choice.finish_reason === 'string' && choice.finish_reason !== ''
  return { content: content === '' ? undefined : content, finished }
}
