// The OpenAI-compatible model adapter: streams `POST {baseUrl}/chat/completions`
// (OpenAI, vLLM, Ollama, llama.cpp server) and yields each content delta as one
// chunk; writes titles with openai-title.ts. Every failure, including silence longer than the timeout, ends as a
// ModelError whose detail is safe to show (CONTRACT §4.3).
import { IdleBudget } from './idle-budget.ts'
import { requestTitle } from './openai-title.ts'
import { readChunk, statusErrorDetail, wireMessages } from './openai-wire.ts'
import { ModelError, type ModelProvider, type ModelRequest } from './provider.ts'
import { SseParser } from './sse-lines.ts'

export interface OpenAiModelOptions {
  /** Reported as `model_slug`; also sent as `model` unless `model` is given. */
  slug: string
  /** The name the server knows the model by (a catalogue entry's `model`). */
  model?: string
  /** Without a trailing slash, e.g. `https://api.openai.com/v1`. */
  baseUrl: string
  apiKey?: string
  /**
   * Whether the model takes `reasoning_effort` (reasoning-models.ts): only
   * then is a send's effort passed on, and its reply limit sent as
   * `max_completion_tokens` (reasoning models refuse `max_tokens`).
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

async function* streamReply(
  options: OpenAiModelOptions,
  request: ModelRequest,
): AsyncGenerator<string> {
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
            messages: wireMessages(request.messages),
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
    // OpenAI ends with `[DONE]`; some compatible servers only send a finish_reason.
    let finished = false
    for (;;) {
      const read = await budget.wait(reader.read()).catch((error: unknown) => {
        throw failure(error, 'The connection to the model server was lost.')
      })
      const events = read.done
        ? [...parser.feed(decoder.decode()), ...parser.end()]
        : parser.feed(decoder.decode(read.value, { stream: true }))
      for (const event of events) {
        budget.refill()
        if (event.data === '[DONE]') return
        const part = readChunk(event.data, apiKey) // throws on bad data or an error body
        if (event.event === 'error')
          throw new ModelError('The model server reported an error during the reply.')
        finished ||= part.finished
        if (part.content === undefined) continue
        if (signal?.aborted) throw failure(undefined, '')
        yield part.content
      }
      if (read.done) break
    }
    if (!finished)
      throw new ModelError('The model server closed the stream before the reply was complete.')
  } finally {
    signal?.removeEventListener('abort', cancel)
    // Closes the upstream request when the consumer stopped early; a no-op after the end.
    controller.abort()
  }
}

/**
 * A ModelProvider for any OpenAI-compatible `/chat/completions` server: replies
 * with `stream: true`, titles with one short request (openai-title.ts).
 */
export function createOpenAiModel(options: OpenAiModelOptions): ModelProvider {
  return {
    slug: options.slug,
    stream: (request) => streamReply(options, request),
    title: (request) => requestTitle(options, request),
  }
}
