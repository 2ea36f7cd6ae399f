// The cached conversation-list document: every page of either order and
// either archive filter cut from it equals the page computed directly from
// the rows; a document of another shape is not taken for one.
import { expect, test } from 'bun:test'
import {
  decodeList,
  encodeList,
  type ListPage,
  listOf,
  pageOf,
} from '../../src/conversation/reads/list-cache.ts'
import type { ConversationRow } from '../../src/conversation/sql/conversations-repository.ts'

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

test('the cached document is a JSON header line, then one JSON item per line in update order', () => {
  const lines = encodeList(listOf(rows)).split('\n')
  expect(JSON.parse(lines[0] ?? '')).toMatchObject({ version: 2 })
  const items = lines.slice(1).map((line) => JSON.parse(line))
  expect(items).toEqual(rows.map(item))
  expect(Object.keys(items[0] ?? {})).toEqual([
    'id',
    'title',
    'last_message',
    'updated_at',
    'is_archived',
    'created_at',
  ])
  expect(decodeList(encodeList(listOf([])))?.items).toEqual([])
})

test('every page of either order and archive filter matches filtering and sorting the rows', () => {
  const list = decodeList(encodeList(listOf(rows)))
  if (!list) throw new Error('the document does not decode')
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
          expect(JSON.parse(pageOf(list, page))).toEqual({
            items: expected.slice(offset, offset + limit).map(item),
            limit,
            offset,
            total: expected.length,
          })
        }
  }
  expect(pageOf(listOf([]), { order: 'created', offset: 0, limit: 20, archived: false })).toBe(
    '{"items":[],"limit":20,"offset":0,"total":0}',
  )
})

test('a document of another shape or version is not read as a list', () => {
  // The shape an earlier release cached under the same key.
  expect(decodeList('{"total":1,"created_order":[0],"items":[\n{"id":"x"}\n]}')).toBeUndefined()
  expect(decodeList('{"version":1,"views":{}}')).toBeUndefined()
  expect(decodeList('{"version":2,"items":[]}')).toBeUndefined()
  expect(decodeList('not json')).toBeUndefined()
  expect(decodeList('null')).toBeUndefined()
})
