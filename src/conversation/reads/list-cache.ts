// The cached form of a user's whole conversation list (CONTRACT §4.5, §11).
// The cache key names no page, order or archive filter, so the document holds
// every conversation, and each read cuts its page from it without parsing or
// re-encoding the items. It is JSON lines:
//
//   {"version":2,"views":{"updated":[0,2],"created":[2,0],"archived:updated":[1],…}}
//   {"id":…}      <- line 1 + i: item i, items by update time, newest first
//   {"id":…}
//
// The first line says, for each order and archive state, which items are
// listed and in what order. JSON.stringify never emits a raw newline, so the
// lines separate safely. The version keeps a document of another release
// (another shape) from being read as this one.

import { textOf } from '../messages.ts'
import type { ConversationRow } from '../sql/conversations-repository.ts'

export type ListOrder = 'updated' | 'created'

export interface ListPage {
  offset: number
  limit: number
  order: ListOrder
  /** Whether the archived conversations are listed, or the others. */
  archived: boolean
}

const VERSION = 2

type ViewName = ListOrder | `archived:${ListOrder}`

interface Header {
  version: typeof VERSION
  /** Line numbers (from 0, after the header) of each view's items, in its order. */
  views: Record<ViewName, number[]>
}

const viewOf = (page: Pick<ListPage, 'order' | 'archived'>): ViewName =>
  page.archived ? `archived:${page.order}` : page.order

/** A decoded document: the header, and the encoded items by update time. */
export interface CachedList {
  header: Header
  items: string[]
}

const encodeItem = (row: ConversationRow) =>
  JSON.stringify({
    id: row.id,
    title: row.title,
    last_message: row.lastContent ? textOf(row.lastContent) : '',
    updated_at: row.updatedAt.toISOString(),
    is_archived: row.isArchived,
    created_at: row.createdAt.toISOString(),
  })

/** Newest created first, then by id. */
const byCreated =
  (rows: readonly ConversationRow[]) =>
  (a: number, b: number): number => {
    const x = rows[a] as ConversationRow
    const y = rows[b] as ConversationRow
    return y.createdAt.getTime() - x.createdAt.getTime() || (x.id < y.id ? -1 : 1)
  }

/** The list of rows ordered newest update first, ready to page and to cache. */
export function listOf(rowsByUpdated: readonly ConversationRow[]): CachedList {
  const indices = rowsByUpdated.map((_, index) => index)
  const created = [...indices].sort(byCreated(rowsByUpdated))
  const archived = (index: number) => (rowsByUpdated[index] as ConversationRow).isArchived
  const active = (index: number) => !archived(index)
  return {
    header: {
      version: VERSION,
      views: {
        updated: indices.filter(active),
        created: created.filter(active),
        'archived:updated': indices.filter(archived),
        'archived:created': created.filter(archived),
      },
    },
    items: rowsByUpdated.map(encodeItem),
  }
}

/** The document cached under the list key. */
export const encodeList = (list: CachedList): string =>
  [JSON.stringify(list.header), ...list.items].join('\n')

/** A cached document; undefined when it is not a document of this version. */
export function decodeList(cached: string): CachedList | undefined {
  const [first, ...items] = cached.split('\n')
  try {
    const header = JSON.parse(first ?? '') as Partial<Header> | null
    if (header?.version === VERSION && typeof header.views === 'object')
      return { header: header as Header, items }
  } catch {}
  return undefined
}

/** The response body for one page. */
export function pageOf(list: CachedList, page: ListPage): string {
  const view = list.header.views[viewOf(page)] ?? []
  const items = view.slice(page.offset, page.offset + page.limit).map((index) => list.items[index])
  return `{"items":[${items.join(',')}],"limit":${page.limit},"offset":${page.offset},"total":${view.length}}`
}
