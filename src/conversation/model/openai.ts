// The OpenAI-compatible model adapter: streams `POST {baseUrl}/chat/completions`
// (OpenAI, vLLM, Ollama, llama.cpp server) and yields each content delta as one
// chunk - or, as events, content and reasoning deltas as they come and the
// round's tool calls once assembled; writes titles with openai-title.ts. Every failure, including silence longer than the timeout, ends as a
// ModelError whose detail is safe to show (CONTRACT §4.3).
import { IdleBudget } from './idle-budget.ts'
import { requestTitle } from './openai-title.ts'
import { readChunk, statusErrorDetail, wireConversation } from './openai-wire.ts'
import { ModelError, type ModelEvent, type ModelProvider, type ModelRequest } from './provider.ts'
import { SseParser } from './sse-lines.ts'
import { ToolCallAssembler } from './tool-call-assembler.ts'

export interface OpenAiModelOptions {
  /** Reported as `model_slug`; also sent as `model` unless `model` is given. */
  slug: string
  /** The name the server knows the model by (a catalogue entry's `model`). */
  model?: string
  /** Without a trailing slash, e.g. `https://api.openai.com/v1`. */
  baseUrl: string
  apiKey?: string
  /**
   * Whether the model takes `reasoning_effort` (decided with the configuration:
   * src/reasoning-models.ts): only then is a send's effort passed on, and its
   * reply limit sent as `max_completion_tokens` (reasoning models refuse `max_tokens`).
   */
  reasoning?: boolean
  /** The reply's limit in tokens, sent as `max_tokens` (or `max_completion_tokens`); unset: the server's. */
  maxTokens?: number
  /** Longest silence (no headers, no event) before the reply fails. */
  timeoutMs: number
  /** Injected in tests; the global fetch otherwise. */
  fetch?: typeof fetch
}

/** The reply's limit and reasoning effort, in the fields the model takes. */
function limitsOf(options: OpenAiModelOptions, request: ModelRequest): Record<string, unknown> {
  const limits: Record<string, unknown> = {}
  if (options.maxTokens !== undefined)
    limits[options.reasoning ? 'max_completion_tokens' : 'max_tokens'] = options.maxTokens
  if (options.reasoning && request.reasoningEffort !== undefined)
    limits.reasoning_effort = request.reasoningEffort
  return limits
}

async function* streamEvents(
  options: OpenAiModelOptions,
  request: ModelRequest,
): AsyncGenerator<ModelEvent> {
  const { signal } = request
  const { apiKey } = options
  // One controller for the upstream request, aborted by a timeout, by the
  // caller's signal, or by the consumer stopping early (see `finally`).
  const controller = new AbortController()
  let timedOut = false
  const budget = new IdleBudget(options.timeoutMs, () => {
    timedOut = true
    controller.abort()
  })
  const cancel = () => controller.abort()
  if (signal?.aborted) cancel()
  signal?.addEventListener('abort', cancel, { once: true })

  // An abort surfaces as some network error; the flags say what it really was.
  const failure = (error: unknown, otherwise: string): ModelError => {
    if (timedOut)
      return new ModelError(`The model did not answer within ${options.timeoutMs / 1000} s.`)
    if (signal?.aborted) return new ModelError('The reply was cancelled.')
    return error instanceof ModelError ? error : new ModelError(otherwise)
  }

  try {
    let response: Response
    try {
      response = await budget.wait(
        (options.fetch ?? fetch)(`${options.baseUrl}/chat/completions`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'text/event-stream',
            ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
          },
          body: JSON.stringify({
            model: options.model ?? options.slug,
            ...wireConversation(request),
            stream: true,
            ...(request.temperature === undefined ? {} : { temperature: request.temperature }),
            ...limitsOf(options, request),
          }),
          signal: controller.signal,
        }),
      )
    } catch (error) {
      throw failure(error, 'The model server could not be reached.')
    }

    if (!response.ok) {
      const fallback = `The model server answered with status ${response.status}.`
      const text = await budget.wait(response.text()).catch((error: unknown) => {
        throw failure(error, fallback)
      })
      throw new ModelError(statusErrorDetail(response.status, text, apiKey))
    }
    if (response.body === null) throw new ModelError('The model server sent an empty answer.')

    const reader = response.body.getReader()
    const decoder = new TextDecoder()
    const parser = new SseParser()
    const calls = new ToolCallAssembler()
    // OpenAI ends with `[DONE]`; some compatible servers only send a finish_reason.
    let finished = false
    let done = false
    for (;;) {
      const read = await budget.wait(reader.read()).catch((error: unknown) => {
        throw failure(error, 'The connection to the model server was lost.')
      })
      const events = read.done
        ? [...parser.feed(decoder.decode()), ...parser.end()]
        : parser.feed(decoder.decode(read.value, { stream: true }))
      for (const event of events) {
        budget.refill()
        if (event.data === '[DONE]') {
          done = true
          break
        }
        const part = readChunk(event.data, apiKey) // throws on bad data or an error body
        if (event.event === 'error')
          throw new ModelError('The model server reported an error during the reply.')
        finished ||= part.finished
        try {
          for (const delta of part.toolCalls) calls.add(delta)
        } catch {
          throw new ModelError('The model server sent tool calls larger than the service takes.')
        }
        if (signal?.aborted) throw failure(undefined, '')
        if (part.reasoning !== undefined) yield { type: 'reasoning', text: part.reasoning }
        if (part.content !== undefined) yield { type: 'text', text: part.content }
      }
      if (done || read.done) break
    }
    if (!done && !finished)
      throw new ModelError('The model server closed the stream before the reply was complete.')
    // A call is only complete once the round is: its arguments may come in its last delta.
    for (const call of calls.finish()) yield { type: 'tool_call', call }
  } finally {
    signal?.removeEventListener('abort', cancel)
    // Closes the upstream request when the consumer stopped early; a no-op after the end.
    controller.abort()
  }
}

/** The text deltas alone: what a caller that offers no tools and shows no reasoning reads. */
async function* textOf(events: AsyncIterable<ModelEvent>): AsyncGenerator<string> {
  for await (const event of events) if (event.type === 'text') yield event.text
}

/**
 * A ModelProvider for any OpenAI-compatible `/chat/completions` server: replies
 * with `stream: true`, titles with one short request (openai-title.ts).
 */
export function createOpenAiModel(options: OpenAiModelOptions): ModelProvider {
  return {
    slug: options.slug,
    stream: (request) => textOf(streamEvents(options, request)),
    events: (request) => streamEvents(options, request),
    title: (request) => requestTitle(options, request),
  }
}
