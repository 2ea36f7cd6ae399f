// The cached conversation-list document: valid JSON, and every page in either
// order cut from it equals the page computed directly.
import { expect, test } from 'bun:test'
import type { ConversationRow } from '../../src/conversation/conversations-repository.ts'
import { encodeList, pageFromList } from '../../src/conversation/list-cache.ts'

const rows: ConversationRow[] = Array.from({ length: 7 }, (_, i) => ({
  id: `00000000-0000-4000-8000-00000000000${i}`,
  title: `title "${i}"\nwith a newline`,
  createdAt: new Date(Date.UTC(2026, 0, 1 + ((i * 3) % 7))),
  updatedAt: new Date(Date.UTC(2026, 1, 10 - i)),
  lastContent: i === 3 ? undefined : { content_type: 'text', parts: [`last\n${i}`, 'more'] },
}))

const item = (row: ConversationRow) => ({
  id: row.id,
  title: row.title,
  last_message: row.lastContent ? row.lastContent.parts.join('\n') : '',
  updated_at: row.updatedAt.toISOString(),
})

test('the cached document is valid JSON', () => {
  const parsed = JSON.parse(encodeList(rows)) as { total: number; items: unknown[] }
  expect(parsed.total).toBe(7)
  expect(parsed.items).toEqual(rows.map(item))
  expect(JSON.parse(encodeList([]))).toEqual({ total: 0, created_order: [], items: [] })
})

test('every page of either order matches sorting the rows directly', () => {
  const doc = encodeList(rows)
  const byCreated = [...rows].sort(
    (a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? -1 : 1),
  )
  for (const order of ['updated', 'created'] as const)
    for (let offset = 0; offset <= 8; offset++)
      for (const limit of [1, 2, 3, 100]) {
        const expected = (order === 'updated' ? rows : byCreated)
          .slice(offset, offset + limit)
          .map(item)
        expect(JSON.parse(pageFromList(doc, { order, offset, limit }))).toEqual({
          items: expected,
          limit,
          offset,
          total: 7,
        })
      }
  expect(pageFromList(encodeList([]), { order: 'created', offset: 0, limit: 20 })).toBe(
    '{"items":[],"limit":20,"offset":0,"total":0}',
  )
})
