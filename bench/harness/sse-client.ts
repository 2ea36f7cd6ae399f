// One client of POST /backend-api/f/conversation: sends a message and reads the
// SSE reply, timing the first append item and the gaps between append items as
// they arrive. Shared by the send + stream and the many-streams scenarios.
import { refusalOf } from './refusals.ts'

export interface StreamResult {
  status: number
  /** From the request's start to the first `/message/content/parts/0` append item. */
  ttfiMs: number | undefined
  /** Time between consecutive append items. */
  gapsMs: number[]
  appendItems: number
  /** Every item (blank-line separated frame holding data), comments excluded. */
  items: number
  /** Whether `data: [DONE]` arrived. */
  done: boolean
  durationMs: number
  /** Wall-clock times (ms since the epoch, sub-ms precision): comparable across processes. */
  startedAtMs: number
  /** When the first append item arrived, or undefined. */
  firstItemAtMs: number | undefined
  conversationId: string | undefined
  error: string | undefined
  /** A send answered with an error: what it said (refusals.ts), e.g. `overloaded`. */
  refusal?: string
}

export interface SendOptions {
  baseUrl: string
  userId: string
  text: string
  conversationId?: string
  timeoutMs: number
}

const APPEND_PATH = '"/message/content/parts/0"'

export function sendBody(userId: string, text: string, conversationId?: string): string {
  return JSON.stringify({
    user_id: userId,
    ...(conversationId ? { conversation_id: conversationId } : {}),
    messages: [{ role: 'user', content: { content_type: 'text', parts: [text] } }],
  })
}

/** The data of one SSE frame (its `data:` lines joined), or undefined for a comment-only frame. */
function frameData(frame: string): string | undefined {
  const lines = frame.split('\n').filter((line) => line.startsWith('data:'))
  if (lines.length === 0) return undefined
  return lines.map((line) => line.slice(line.startsWith('data: ') ? 6 : 5)).join('\n')
}

function conversationIdOf(data: string): string | undefined {
  if (!data.includes('"resume_conversation_token"')) return undefined
  const parsed: unknown = JSON.parse(data)
  if (typeof parsed !== 'object' || parsed === null || !('conversation_id' in parsed))
    return undefined
  return typeof parsed.conversation_id === 'string' ? parsed.conversation_id : undefined
}

/** Now, as ms since the epoch with performance.now()'s precision. */
export const wallClockMs = () => performance.timeOrigin + performance.now()

export async function sendAndStream(options: SendOptions): Promise<StreamResult> {
  const started = performance.now()
  const result: StreamResult = {
    status: 0,
    ttfiMs: undefined,
    gapsMs: [],
    appendItems: 0,
    items: 0,
    done: false,
    durationMs: 0,
    startedAtMs: performance.timeOrigin + started,
    firstItemAtMs: undefined,
    conversationId: undefined,
    error: undefined,
  }
  let lastAppend = 0
  const onFrame = (frame: string) => {
    const data = frameData(frame)
    if (data === undefined) return
    result.items++
    if (data === '[DONE]') result.done = true
    else if (data.includes(APPEND_PATH)) {
      const now = performance.now()
      if (result.appendItems === 0) {
        result.ttfiMs = now - started
        result.firstItemAtMs = performance.timeOrigin + now
      } else result.gapsMs.push(now - lastAppend)
      lastAppend = now
      result.appendItems++
    } else result.conversationId ??= conversationIdOf(data)
  }
  try {
    const response = await fetch(`${options.baseUrl}/backend-api/f/conversation`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: sendBody(options.userId, options.text, options.conversationId),
      signal: AbortSignal.timeout(options.timeoutMs),
    })
    result.status = response.status
    if (!response.ok || response.body === null) {
      const body = await response.text()
      result.error = `HTTP ${response.status}: ${body.slice(0, 200)}`
      if (!response.ok) result.refusal = refusalOf(response.status, body)
      return result
    }
    const decoder = new TextDecoder()
    let buffer = ''
    for await (const chunk of response.body) {
      buffer += decoder.decode(chunk, { stream: true })
      let end = buffer.indexOf('\n\n')
      while (end !== -1) {
        onFrame(buffer.slice(0, end))
        buffer = buffer.slice(end + 2)
        end = buffer.indexOf('\n\n')
      }
    }
    if (!result.done) result.error = 'the stream ended without [DONE]'
  } catch (error) {
    result.error = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  } finally {
    result.durationMs = performance.now() - started
  }
  return result
}
