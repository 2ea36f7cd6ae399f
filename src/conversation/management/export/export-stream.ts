// The export (CONTRACT §17): a user's conversations as one JSON array of
// detail objects, chatgpt.com's conversations.json, written as it is read.
// The stream pulls a page of conversations when the client has taken the last
// one (a ReadableStream asks for more only when its queue is empty), and
// reads their messages a batch at a time, so memory holds about one batch
// however many conversations the user has: at most BATCH_MESSAGES messages,
// or one conversation when a single one holds more.
import type { Db } from '../../../storage/db.ts'
import { detailBody } from '../../tree/tree-detail.ts'
import {
  type ExportCursor,
  type ExportedHead,
  exportHeads,
  exportMessages,
} from './export-repository.ts'

export interface ExportDeps {
  db: Db
  /** The detail's default model when no reply names one. */
  modelSlug: string
  warn: (message: string, error: unknown) => void
}

export interface ExportRequest {
  userId: string
  /** Only archived (true) or only not archived (false) conversations; both when undefined. */
  archived: boolean | undefined
}

/** Conversations read per page of the list. */
const PAGE_CONVERSATIONS = 100
/** Messages read per batch (a conversation holding more is a batch of its own). */
const BATCH_MESSAGES = 500

/** The next batch from `pending`: at least one conversation, at most BATCH_MESSAGES messages. */
function takeBatch(pending: ExportedHead[]): ExportedHead[] {
  let messages = 0
  let count = 0
  for (const head of pending) {
    if (count > 0 && messages + head.messageCount > BATCH_MESSAGES) break
    messages += head.messageCount
    count++
  }
  return pending.splice(0, count)
}

/** The user's conversations as the bytes of one JSON array, produced as the reader pulls. */
export function exportStream(deps: ExportDeps, request: ExportRequest): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  const pending: ExportedHead[] = []
  let cursor: ExportCursor | undefined
  let listed = false
  let opened = false

  async function nextChunk(): Promise<string | undefined> {
    if (pending.length === 0 && !listed) {
      const page = await exportHeads(
        deps.db,
        request.userId,
        request.archived,
        cursor,
        PAGE_CONVERSATIONS,
      )
      pending.push(...page)
      cursor = page.at(-1)?.cursor
      listed = page.length < PAGE_CONVERSATIONS
    }
    if (pending.length === 0) return undefined
    const batch = takeBatch(pending)
    const rows = await exportMessages(
      deps.db,
      batch.map((head) => head.id),
    )
    let text = ''
    for (const head of batch) {
      const messages = rows.get(head.id)
      // A conversation always has messages; one deleted meanwhile has none and is left out.
      if (!messages || messages.length === 0) continue
      text += (opened ? ',' : '[') + detailBody(head, messages, deps.modelSlug)
      opened = true
    }
    return text
  }

  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          // A batch whose conversations all went meanwhile gives nothing: read on.
          for (;;) {
            const text = await nextChunk()
            if (text === undefined) {
              controller.enqueue(encoder.encode(opened ? ']' : '[]'))
              controller.close()
              return
            }
            if (text !== '') {
              controller.enqueue(encoder.encode(text))
              return
            }
          }
        } catch (error) {
          // The client sees the download break off: a truncated array is not valid JSON.
          deps.warn('the export failed', error)
          controller.error(error)
        }
      },
    },
    { highWaterMark: 0 },
  )
}
