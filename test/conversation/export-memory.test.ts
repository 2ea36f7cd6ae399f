// The export is streamed, not built whole (CONTRACT §17): a user with 10,000
// messages (imported, which reads the file one conversation at a time)
// downloads them while the live heap, measured after a full collection at
// every chunk read, grows by a small part of the download's size. A server
// that built the whole array first would hold all of it at the first chunk.
// On every backend.

import { heapStats } from 'bun:jsc'
import { beforeAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { appBackends } from '../support/backends.ts'
import { conversationApp, get, newUser, type TestApp } from '../support/conversation-app.ts'
import { chatgptConversation, type Detail, EXPORT, imported } from '../support/transfer.ts'

const CONVERSATIONS = 40
const MESSAGES_EACH = 250
/** About 2 KB a message. */
const TEXT = 'All work and no play makes a dull export. '.repeat(48)

/** Live heap bytes after a full collection. */
function liveHeap(): number {
  Bun.gc(true)
  return heapStats().heapSize
}

for (const backend of appBackends())
  describe(backend.name, () => {
    let t: TestApp
    let user: string
    beforeAll(async () => {
      t = await conversationApp({ backend })
      user = newUser()
      const file = Array.from({ length: CONVERSATIONS }, () =>
        chatgptConversation(
          randomUUID(),
          Array.from({ length: MESSAGES_EACH }, (_, index) => ({ id: `m${index}`, text: TEXT })),
        ),
      )
      const report = await imported(t.app, user, JSON.stringify(file))
      expect(report).toEqual({ imported: CONVERSATIONS, skipped: [] })
    }, 240_000)

    test('a 10,000-message export streams within a memory bound', async () => {
      const response = await get(t.app, EXPORT, { 'x-user-id': user })
      expect(response.status).toBe(200)
      const reader = (response.body as ReadableStream<Uint8Array>).getReader()
      const baseline = liveHeap()
      let peak = 0
      let bytes = 0
      let chunks = 0
      // Only the end of the text is kept, to check the array closes.
      let tail = ''
      for (;;) {
        const read = await reader.read()
        if (read.done) break
        bytes += read.value.byteLength
        chunks++
        tail = (tail + new TextDecoder().decode(read.value)).slice(-64)
        peak = Math.max(peak, liveHeap() - baseline)
      }
      expect(bytes).toBeGreaterThan(CONVERSATIONS * MESSAGES_EACH * TEXT.length)
      expect(chunks).toBeGreaterThan(CONVERSATIONS / 8)
      expect(tail.endsWith('}]')).toBe(true)
      // The download is about 45 MB (each message is in `messages` and in `mapping`);
      // a batch of 500 messages as rows and as text took about 8 MB here.
      expect(peak).toBeLessThan(bytes / 4)
    }, 240_000)

    test('the export of that user holds every message', async () => {
      const entries = (await (await get(t.app, EXPORT, { 'x-user-id': user })).json()) as Detail[]
      expect(entries).toHaveLength(CONVERSATIONS)
      const messages = entries.reduce(
        (sum, entry) => sum + Object.keys(entry.mapping).length - 1,
        0,
      )
      expect(messages).toBe(CONVERSATIONS * MESSAGES_EACH)
    }, 240_000)
  })
