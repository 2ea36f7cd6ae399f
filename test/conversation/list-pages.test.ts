// The page memo over cached list documents: a page it gives equals the page
// cut from the document it was given, a changed document is never answered
// with a page of the old one, text that is not a list document gives none,
// and its bound in bytes holds.
import { expect, test } from 'bun:test'
import {
  decodeList,
  encodeList,
  type ListPage,
  listOf,
  pageOf,
} from '../../src/conversation/reads/list-cache.ts'
import { createListPages } from '../../src/conversation/reads/list-pages.ts'
import type { ConversationRow } from '../../src/conversation/sql/conversations-repository.ts'

const row = (i: number, title = `title ${i}`): ConversationRow => ({
  id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
  title,
  createdAt: new Date(Date.UTC(2026, 0, 1 + i)),
  updatedAt: new Date(Date.UTC(2026, 1, 28 - i)),
  isArchived: i % 4 === 3,
  lastContent: { content_type: 'text', parts: [`last ${i}`] },
})

const documentOf = (rows: ConversationRow[]) => encodeList(listOf(rows))
const first: ListPage = { offset: 0, limit: 2, order: 'updated', archived: false }

function directPage(document: string, page: ListPage): string {
  const list = decodeList(document)
  if (!list) throw new Error('not a list document')
  return pageOf(list, page)
}

test('each page equals the page cut from the document given, for every order and filter', () => {
  const pages = createListPages()
  const document = documentOf(Array.from({ length: 9 }, (_, i) => row(i)))
  for (const archived of [false, true])
    for (const order of ['updated', 'created'] as const)
      for (const offset of [0, 1, 5])
        for (const limit of [1, 3, 100]) {
          const page = { archived, order, offset, limit }
          // Twice: the second answer comes from the memo.
          expect(pages('user:a', document, page)).toBe(directPage(document, page))
          expect(pages('user:a', document, page)).toBe(directPage(document, page))
        }
})

test('a changed document under the same key is paged afresh, never from the old one', () => {
  const pages = createListPages()
  const before = documentOf([row(1), row(2)])
  const after = documentOf([row(1, 'renamed'), row(2)])
  expect(pages('user:a', before, first)).toContain('"title 1"')
  const changed = pages('user:a', after, first)
  expect(changed).toBe(directPage(after, first))
  expect(changed).toContain('"renamed"')
  expect(changed).not.toContain('"title 1"')
  // And back: the memo holds one document per key.
  expect(pages('user:a', before, first)).toBe(directPage(before, first))
})

test("keys are separate: one user's document never answers for another", () => {
  const pages = createListPages()
  const mine = documentOf([row(1, 'mine')])
  const theirs = documentOf([row(2, 'theirs')])
  expect(pages('user:a', mine, first)).toContain('"mine"')
  expect(pages('user:b', theirs, first)).toContain('"theirs"')
  expect(pages('user:a', mine, first)).not.toContain('"theirs"')
})

test('text that is not a list document of this version gives no page', () => {
  const pages = createListPages()
  expect(pages('user:a', '{"version":1,"views":{}}\n{"id":"x"}', first)).toBeUndefined()
  expect(pages('user:a', 'not json', first)).toBeUndefined()
  expect(pages('user:a', '', first)).toBeUndefined()
})

test('documents beyond the byte bound are evicted, and still paged correctly when read again', () => {
  const document = (i: number) => documentOf(Array.from({ length: 20 }, (_, j) => row(j, `u${i}`)))
  // Room for about two documents of this size.
  const pages = createListPages(document(0).length * 4 * 2 + 1)
  for (let i = 0; i < 10; i++) expect(pages(`user:${i}`, document(i), first)).toContain(`"u${i}"`)
  for (let i = 0; i < 10; i++)
    expect(pages(`user:${i}`, document(i), first)).toBe(directPage(document(i), first))
})
