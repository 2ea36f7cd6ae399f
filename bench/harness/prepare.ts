// Prepares each run's data through the public API, as a client would: one
// reader with a set of conversations, and a set of documents. Names carry a
// run id, so runs against a shared database never collide.
import { randomBytes } from 'node:crypto'
import { sendAndStream } from './sse-client.ts'

export interface Prepared {
  runId: string
  /** The user whose history and list are read; nothing writes to them during the reads. */
  reader: string
  /** One of the reader's conversations. */
  historyId: string
  conversations: number
  /** A question matching the run's documents. */
  question: string
  documents: number
}

const CONVERSATIONS = 20
const DOCUMENTS = 10
const PARALLEL = 5

async function createConversation(baseUrl: string, userId: string, index: number): Promise<string> {
  const result = await sendAndStream({
    baseUrl,
    userId,
    text: `Benchmark conversation ${index}: what does a cache hit cost?`,
    timeoutMs: 30_000,
  })
  if (!result.done || result.conversationId === undefined)
    throw new Error(
      `preparing conversation ${index} failed: ${result.error ?? 'no conversation id'}`,
    )
  return result.conversationId
}

async function createDocument(baseUrl: string, runId: string, index: number): Promise<void> {
  const response = await fetch(`${baseUrl}/documents`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      content: `Benchmark ${runId} document ${index}: a cached list, a literal substring query and a healthy service.`,
      metadata: { source: 'bench', run: runId, index },
    }),
    signal: AbortSignal.timeout(10_000),
  })
  const body = await response.text()
  if (response.status !== 200 || !body.includes('"id"'))
    throw new Error(
      `preparing document ${index} failed: HTTP ${response.status} ${body.slice(0, 200)}`,
    )
}

/** Runs `task(i)` for i in [0, count), at most `parallel` at a time. */
async function inBatches(
  count: number,
  parallel: number,
  task: (index: number) => Promise<unknown>,
) {
  for (let start = 0; start < count; start += parallel) {
    const batch = Array.from({ length: Math.min(parallel, count - start) }, (_, i) =>
      task(start + i),
    )
    await Promise.all(batch)
  }
}

export async function prepareData(baseUrl: string): Promise<Prepared> {
  const runId = `bench${Date.now().toString(36)}${randomBytes(3).toString('hex')}`
  const reader = `${runId}-reader`
  const ids: string[] = []
  await inBatches(CONVERSATIONS, PARALLEL, async (index) => {
    ids[index] = await createConversation(baseUrl, reader, index)
  })
  await inBatches(DOCUMENTS, PARALLEL, (index) => createDocument(baseUrl, runId, index))
  const historyId = ids[0]
  if (historyId === undefined) throw new Error('preparing: no conversation was created')
  return {
    runId,
    reader,
    historyId,
    conversations: CONVERSATIONS,
    question: runId,
    documents: DOCUMENTS,
  }
}
