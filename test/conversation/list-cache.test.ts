// The cached conversation-list document: every page of either order and
// either archive filter cut from it equals the page computed directly from
// the rows; a document of another shape is not taken for one.
import { expect, test } from 'bun:test'
import type { ConversationRow } from '../../src/conversation/conversations-repository.ts'
import {
  decodeList,
  encodeList,
  type ListPage,
  listItems,
  pageOf,
} from '../../src/conversation/list-cache.ts'

const rows: ConversationRow[] = Array.from({ length: 9 }, (_, i) => ({
  id: `00000000-0000-4000-8000-00000000000${i}`,
  title: `title "${i}"\nwith a newline`,
  // Two rows share a creation time: the order then falls back to the id.
  createdAt: new Date(Date.UTC(2026, 0, 1 + ((i * 3) % 7))),
  updatedAt: new Date(Date.UTC(2026, 1, 10 - i)),
  isArchived: i % 3 === 1,
  lastContent: i === 3 ? undefined : { content_type: 'text', parts: [`last\n${i}`, 'more'] },
}))

const item = (row: ConversationRow) => ({
  id: row.id,
  title: row.title,
  last_message: row.lastContent ? row.lastContent.parts.join('\n') : '',
  updated_at: row.updatedAt.toISOString(),
  is_archived: row.isArchived,
  created_at: row.createdAt.toISOString(),
})

test('the cached document decodes to the items, in update order', () => {
  const decoded = decodeList(encodeList(listItems(rows)))
  expect(decoded).toEqual(rows.map(item))
  expect(Object.keys(decoded?.[0] ?? {})).toEqual([
    'id',
    'title',
    'last_message',
    'updated_at',
    'is_archived',
    'created_at',
  ])
  expect(decodeList(encodeList([]))).toEqual([])
})

test('every page of either order and archive filter matches filtering and sorting the rows', () => {
  const items = decodeList(encodeList(listItems(rows))) ?? []
  const byCreated = [...rows].sort(
    (a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.id < b.id ? -1 : 1),
  )
  for (const archived of [false, true]) {
    const kind = (list: ConversationRow[]) => list.filter((row) => row.isArchived === archived)
    for (const order of ['updated', 'created'] as const)
      for (let offset = 0; offset <= 8; offset++)
        for (const limit of [1, 2, 3, 100]) {
          const page: ListPage = { order, offset, limit, archived }
          const expected = kind(order === 'updated' ? rows : byCreated)
          expect(JSON.parse(pageOf(items, page))).toEqual({
            items: expected.slice(offset, offset + limit).map(item),
            limit,
            offset,
            total: expected.length,
          })
        }
  }
  expect(pageOf([], { order: 'created', offset: 0, limit: 20, archived: false })).toBe(
    '{"items":[],"limit":20,"offset":0,"total":0}',
  )
})

test('a document of another shape or version is not read as a list', () => {
  // The shape an earlier release cached under the same key.
  expect(decodeList('{"total":1,"created_order":[0],"items":[\n{"id":"x"}\n]}')).toBeUndefined()
  expect(decodeList('{"version":1,"items":[]}')).toBeUndefined()
  expect(decodeList('not json')).toBeUndefined()
  expect(decodeList('null')).toBeUndefined()
})
