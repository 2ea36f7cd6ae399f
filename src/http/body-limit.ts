// Reads request bodies with a size limit (CONTRACT §8: over 1 MB → 413) and a
// time limit (CONTRACT §19: a body not fully arrived within BODY_TIMEOUT_MS →
// 408), and parses JSON itself, so oversized, chunked or trickled bodies are
// refused before they are buffered whole and a malformed body (bad JSON,
// bytes that are not UTF-8) gets the §3 error. Both refusals close the
// connection (error-response.ts). What the parsed text may contain is
// input-guard.ts's job.
//
// The time limit is a deadline for the whole body, not an idle timer: Bun's
// own idleTimeout restarts with every byte, so a client sending one byte
// every few seconds would otherwise hold its request (and a reader) forever.
import { Elysia } from 'elysia'
import { invalid, tooLarge, tooSlow } from '../errors.ts'

export const MAX_BODY_BYTES = 1024 * 1024
/** BODY_TIMEOUT_MS's default (config-schema.ts). */
export const DEFAULT_BODY_TIMEOUT_MS = 30_000

const UTF8 = new TextDecoder('utf-8', { fatal: true })

const bodyTooLarge = () => tooLarge('The request body is larger than 1 MB.')
const bodyTooSlow = () =>
  tooSlow('The request body did not arrive in time; send it again, all at once.')

/** A body that is not JSON, found here or by Elysia's own parser (error-handler.ts). */
export const notJson = () => invalid('The request body is not valid JSON.', 'invalid_json')

export interface BodyReadLimits {
  maxBytes?: number
  /** How long the whole body may take to arrive, from the start of reading. */
  timeoutMs?: number
}

/** The body as text, refusing it as soon as it passes maxBytes or its deadline. */
export async function readLimitedText(
  request: Request,
  { maxBytes = MAX_BODY_BYTES, timeoutMs = DEFAULT_BODY_TIMEOUT_MS }: BodyReadLimits = {},
): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? 0)
  if (declared > maxBytes) throw bodyTooLarge()
  if (!request.body) return ''
  const reader = request.body.getReader()
  // One timer per body: cancelling the reader ends the read that is waiting.
  let late = false
  const deadline = setTimeout(() => {
    late = true
    reader.cancel().catch(() => {})
  }, timeoutMs)
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (late) throw bodyTooSlow()
      if (done) break
      size += value.byteLength
      if (size > maxBytes) {
        await reader.cancel()
        throw bodyTooLarge()
      }
      chunks.push(value)
    }
  } finally {
    clearTimeout(deadline)
  }
  try {
    return UTF8.decode(Buffer.concat(chunks))
  } catch {
    // Decoding leniently would store U+FFFD in place of what was sent.
    throw invalid('The request body is not valid UTF-8.')
  }
}

/**
 * Routes that read their own body as a stream, with a limit of their own (an
 * import, CONTRACT §17; an attachment's bytes, §20): their body is left unread here, and they get this as `body`.
 */
const STREAMED_BODY_ROUTES = new Set([
  '/backend-api/conversations/import',
  // The folder store's signed upload URL (src/files/): an attachment's bytes, up to FILE_MAX_BYTES.
  '/files/blob',
])
export const STREAMED_BODY = Object.freeze({ streamed: true })

export interface BodyLimitOptions {
  /** BODY_TIMEOUT_MS. */
  timeoutMs: number
  /** The largest body any route takes (an import's IMPORT_MAX_BYTES); a larger declared one is refused at once. */
  largestBodyBytes: number
}

/**
 * The body limits as a plugin. A declared Content-Length past what any route
 * takes is refused before routing, for every path (the 404s too), so the
 * server itself never needs Bun's bare, bodiless 413 (src/index.ts).
 */
export function bodyLimitWith({ timeoutMs, largestBodyBytes }: BodyLimitOptions) {
  return new Elysia({ name: 'body-limit', seed: `${timeoutMs}:${largestBodyBytes}` })
    .onRequest(({ request }) => {
      const declared = Number(request.headers.get('content-length') ?? 0)
      if (declared > largestBodyBytes)
        throw tooLarge(
          `The request body is larger than any request may send (${largestBodyBytes} bytes).`,
        )
    })
    .onParse({ as: 'global' }, async ({ request, contentType, route }) => {
      if (STREAMED_BODY_ROUTES.has(route)) return STREAMED_BODY
      const text = await readLimitedText(request, { timeoutMs })
      if (!contentType || contentType.startsWith('application/json')) {
        if (text.trim() === '') return null
        try {
          return JSON.parse(text)
        } catch {
          throw notJson()
        }
      }
      return text
    })
}

/** The limits with their defaults (test apps that mount single plugins). */
export const bodyLimit = bodyLimitWith({
  timeoutMs: DEFAULT_BODY_TIMEOUT_MS,
  largestBodyBytes: MAX_BODY_BYTES,
})
