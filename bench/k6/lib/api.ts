// Shared by the k6 scripts: the base URL, request bodies, and reading a whole
// SSE reply. k6's http module hands back the body only once the stream has
// ended, so stream timings come from the response's own timings (see
// send-stream.ts for what that means).
import { fail } from 'k6'
import http from 'k6/http'

/** The service under test; compose sets it to http://lb:80, the load balancer. */
export const BASE_URL = (__ENV.BASE_URL || 'http://localhost:3000').replace(/\/+$/, '')

/** Seconds each measured scenario runs (DURATION=1m to run longer). */
export const DURATION = __ENV.DURATION || '30s'

export const JSON_HEADERS = { 'content-type': 'application/json' }

/** A name for this run's data, so runs against one database never collide. */
export function newRunId(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e9).toString(36)}`
}

export function sendBody(userId: string, text: string): string {
  return JSON.stringify({
    user_id: userId,
    messages: [{ role: 'user', content: { content_type: 'text', parts: [text] } }],
  })
}

export interface StreamFacts {
  /** Items (frames with data), comments excluded. */
  items: number
  /** `/message/content/parts/0` append items: the reply's chunks. */
  appendItems: number
  /** Whether `data: [DONE]` ended the stream. */
  done: boolean
  conversationId: string | undefined
}

/** Reads a complete `delta_encoding` v1 SSE body. */
export function parseStream(body: string): StreamFacts {
  const facts: StreamFacts = { items: 0, appendItems: 0, done: false, conversationId: undefined }
  for (const frame of body.split('\n\n')) {
    const data = frame
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => line.slice(6))
      .join('\n')
    if (data === '') continue
    facts.items++
    if (data === '[DONE]') facts.done = true
    else if (data.indexOf('"/message/content/parts/0"') !== -1) facts.appendItems++
    else if (
      facts.conversationId === undefined &&
      data.indexOf('"resume_conversation_token"') !== -1
    ) {
      const parsed = JSON.parse(data) as { conversation_id?: string }
      facts.conversationId = parsed.conversation_id
    }
  }
  return facts
}

/** Sends one message as `userId` and reads the reply to the end; fails the test when it breaks. */
export function createConversation(userId: string, text: string): string {
  const res = http.post(`${BASE_URL}/backend-api/f/conversation`, sendBody(userId, text), {
    headers: JSON_HEADERS,
    timeout: '60s',
  })
  const facts = parseStream(typeof res.body === 'string' ? res.body : '')
  if (res.status !== 200 || !facts.done || facts.conversationId === undefined)
    fail(`setup: sending a message failed with HTTP ${res.status}`)
  return facts.conversationId
}

/** GET that must answer 200 (used by setup() for warming reads). */
export function getOk(path: string, headers: Record<string, string> = {}): string {
  const res = http.get(`${BASE_URL}${path}`, { headers })
  if (res.status !== 200) fail(`setup: GET ${path} answered HTTP ${res.status}`)
  return typeof res.body === 'string' ? res.body : ''
}
