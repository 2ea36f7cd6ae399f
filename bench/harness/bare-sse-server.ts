// The reference of the many-streams scenario: a minimal Elysia app, started by
// the harness beside the service (bare-sse.ts), that answers the stream
// clients' POST /backend-api/f/conversation with an SSE reply framed like the
// service's: the same head items, one append item per chunk of the local
// model's reply to that message (same count, same bytes), every chunkDelayMs
// on one timer per stream, then the completion, title, stream-complete and
// [DONE] items. No database, no Redis, no turn log, no resume token signing:
// whatever the service spends beyond this is what the ratio to it measures.
// Takes the chunk delay (ms) as its argument; prints its port.
import { Elysia } from 'elysia'
import {
  assistantStartMessage,
  titleFrom,
  unixSeconds,
  userStreamMessage,
} from '../../src/conversation/messages.ts'
import { localReply, splitIntoChunks } from '../../src/conversation/model/local.ts'
import {
  appendItem,
  assistantAddItem,
  completionItem,
  deltaEncodingItem,
  doneItem,
  firstTokenMarkerItem,
  frameOf,
  inputMessageItem,
  resumeTokenItem,
  type StreamItem,
  streamCompleteItem,
  titleGenerationItem,
} from '../../src/conversation/stream/encoding.ts'
import { SSE_HEADERS } from '../../src/conversation/stream/sse-response.ts'

const chunkDelayMs = Number(process.argv[2] ?? '100')
if (!Number.isFinite(chunkDelayMs) || chunkDelayMs < 0)
  throw new Error(`bare-sse-server: bad chunk delay ${process.argv[2]}`)

/** Stands in for the service's signed resume token: about its length, never checked. */
const RESUME_TOKEN = 'bare-reference.'.padEnd(300, 'x')
const encoder = new TextEncoder()

/** The text of the request's last message, as the stream clients send it (sse-client.ts). */
function userTextOf(body: unknown): string {
  const messages = (body as { messages?: { content?: { parts?: unknown[] } }[] } | null)?.messages
  const part = messages?.at(-1)?.content?.parts?.[0]
  return typeof part === 'string' ? part : ''
}

/** Every item of the reply to `text` in a new conversation, in wire order, and which are appends. */
function replyItems(text: string): {
  head: StreamItem[]
  appends: StreamItem[]
  tail: StreamItem[]
} {
  const conversationId = crypto.randomUUID()
  const userId = crypto.randomUUID()
  const replyId = crypto.randomUUID()
  const now = unixSeconds()
  const user = userStreamMessage({
    id: userId,
    role: 'user',
    content: { content_type: 'text', parts: [text] },
    createTime: now,
  })
  const assistant = assistantStartMessage({
    id: replyId,
    createTime: now,
    modelSlug: 'local-echo',
    parentId: userId,
    messageType: 'next',
  })
  // A new conversation's context is the user's message alone: the same reply, chunk for chunk.
  const chunks = splitIntoChunks(localReply([{ role: 'user', content: text }]))
  return {
    head: [
      deltaEncodingItem(),
      resumeTokenItem(RESUME_TOKEN, conversationId),
      inputMessageItem(user, conversationId),
      assistantAddItem(assistant, conversationId),
      firstTokenMarkerItem(conversationId, replyId),
    ],
    appends: chunks.map(appendItem),
    tail: [
      completionItem('stop'),
      titleGenerationItem(titleFrom(text), conversationId),
      streamCompleteItem(conversationId),
      doneItem(),
    ],
  }
}

/** The head and first append at once, then one append every chunkDelayMs (as the local model waits between chunks), then the tail. */
function replyStream(text: string): ReadableStream<Uint8Array> {
  const { head, appends, tail } = replyItems(text)
  let timer: ReturnType<typeof setTimeout> | undefined
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (item: StreamItem) => controller.enqueue(encoder.encode(frameOf(item)))
      for (const item of head) write(item)
      let next = 0
      const writeNext = () => {
        const append = appends[next++]
        if (append !== undefined) write(append)
        if (next < appends.length) {
          timer = setTimeout(writeNext, chunkDelayMs)
          return
        }
        for (const item of tail) write(item)
        controller.close()
      }
      writeNext()
    },
    cancel() {
      clearTimeout(timer)
    },
  })
}

const app = new Elysia()
  .get('/health', () => 'ok')
  .post(
    '/backend-api/f/conversation',
    ({ body }) => new Response(replyStream(userTextOf(body)), { headers: SSE_HEADERS }),
  )
app.listen({ port: 0, hostname: '127.0.0.1', reusePort: false, idleTimeout: 120 })
console.log(String(app.server?.port))
