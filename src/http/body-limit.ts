// Reads request bodies with a size limit (CONTRACT §8: over 1 MB → 413) and
// parses JSON itself, so oversized or chunked bodies are refused before they
// are buffered whole and a malformed body (bad JSON, bytes that are not UTF-8)
// gets the §3 error. What the parsed text may contain is input-guard.ts's job.
import { Elysia } from 'elysia'
import { invalid, tooLarge } from '../errors.ts'

export const MAX_BODY_BYTES = 1024 * 1024

const UTF8 = new TextDecoder('utf-8', { fatal: true })

const bodyTooLarge = () => tooLarge('The request body is larger than 1 MB.')

/** A body that is not JSON, found here or by Elysia's own parser (error-handler.ts). */
export const notJson = () => invalid('The request body is not valid JSON.', 'invalid_json')

/** The body as text, refusing it as soon as it passes maxBytes. */
export async function readLimitedText(
  request: Request,
  maxBytes = MAX_BODY_BYTES,
): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? 0)
  if (declared > maxBytes) throw bodyTooLarge()
  if (!request.body) return ''
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > maxBytes) {
      await reader.cancel()
      throw bodyTooLarge()
    }
    chunks.push(value)
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

export const bodyLimit = new Elysia({ name: 'body-limit' }).onParse(
  { as: 'global' },
  async ({ request, contentType, route }) => {
    if (STREAMED_BODY_ROUTES.has(route)) return STREAMED_BODY
    const text = await readLimitedText(request)
    if (!contentType || contentType.startsWith('application/json')) {
      if (text.trim() === '') return null
      try {
        return JSON.parse(text)
      } catch {
        throw notJson()
      }
    }
    return text
  },
)
