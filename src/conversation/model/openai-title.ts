// The OpenAI adapter's title writer (CONTRACT §11): one short, non-streaming
// `POST {baseUrl}/chat/completions` asking the model to name a conversation
// from its first user message (asked as the reply starts, so the title can
// stream before the reply ends). Every failure, and an abort through the
// request's signal, is a ModelError; the caller then names the conversation
// after its first message.
import { statusErrorDetail } from './openai-wire.ts'
import { ModelError, type TitleRequest } from './provider.ts'

/** Enough of the message for the model to see what the conversation is about. */
const EXCERPT_CHARS = 2_000

const INSTRUCTION =
  'Write a short title (at most 6 words) for the conversation that starts with the user message below, in its language. ' +
  'Answer with the title only: no quotes, no punctuation at the end.'

const excerpt = (text: string) => Array.from(text).slice(0, EXCERPT_CHARS).join('')

/** The title in a model's answer: one line, without a "Title:" label, quotes or markdown. */
export function cleanTitle(answer: string): string {
  const line = answer.trim().split('\n')[0] ?? ''
  return line
    .replace(/^\s*(?:#+\s*)?(?:title\s*:\s*)?/i, '')
    .replace(/^["'“”‘’*_`\s]+|["'“”‘’*_`\s.]+$/g, '')
    .replace(/\s+/g, ' ')
}

/** Where a title is asked for: the part of an OpenAI model's options (openai.ts) a title request uses. */
export interface TitleEndpoint {
  /** Sent as `model` unless `model` is given. */
  slug: string
  model?: string
  baseUrl: string
  apiKey?: string
  /** Longest wait for the answer. */
  timeoutMs: number
  fetch?: typeof fetch
}

export async function requestTitle(options: TitleEndpoint, request: TitleRequest): Promise<string> {
  const { apiKey } = options
  let response: Response
  try {
    response = await (options.fetch ?? fetch)(`${options.baseUrl}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
      },
      body: JSON.stringify({
        model: options.model ?? options.slug,
        messages: [
          { role: 'system', content: INSTRUCTION },
          { role: 'user', content: excerpt(request.userText) },
        ],
        stream: false,
      }),
      signal: request.signal
        ? AbortSignal.any([request.signal, AbortSignal.timeout(options.timeoutMs)])
        : AbortSignal.timeout(options.timeoutMs),
    })
  } catch {
    throw new ModelError('The model server could not be reached for a title.')
  }
  const text = await response.text().catch(() => {
    throw new ModelError('The connection to the model server was lost.')
  })
  if (!response.ok) throw new ModelError(statusErrorDetail(response.status, text, apiKey))
  let content: unknown
  try {
    content = (JSON.parse(text) as { choices?: { message?: { content?: unknown } }[] }).choices?.[0]
      ?.message?.content
  } catch {
    // Handled below with every other unreadable answer.
  }
  const title = typeof content === 'string' ? cleanTitle(content) : ''
  if (title === '') throw new ModelError('The model server sent no title.')
  return title
}
