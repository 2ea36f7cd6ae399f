// The cached form of a user's whole conversation list (CONTRACT §4.5, §11).
// The cache key names no page, order or archive filter, so the document holds
// every conversation as its list item, newest update first, and each read cuts
// its page from it: keep the asked-for kind (archived or not), re-sort for
// `order=created`, slice. The document is versioned so that one cached by an
// older release (another shape) is never read as this one.
import type { ConversationRow } from './conversations-repository.ts'
import { textOf } from './messages.ts'

export type ListOrder = 'updated' | 'created'

export interface ListPage {
  offset: number
  limit: number
  order: ListOrder
  /** Whether the archived conversations are listed, or the others. */
  archived: boolean
}

/** One conversation as the list shows it; key order is the wire order. */
export interface ListItem {
  id: string
  title: string
  last_message: string
  updated_at: string
  is_archived: boolean
  created_at: string
}

interface ListDocument {
  version: typeof VERSION
  items: ListItem[]
}

const VERSION = 2

const itemOf = (row: ConversationRow): ListItem => ({
  id: row.id,
  title: row.title,
  last_message: row.lastContent ? textOf(row.lastContent) : '',
  updated_at: row.updatedAt.toISOString(),
  is_archived: row.isArchived,
  created_at: row.createdAt.toISOString(),
})

/** Newest created first, then by id; ISO 8601 UTC strings sort as their instants. */
function byCreated(a: ListItem, b: ListItem): number {
  if (a.created_at !== b.created_at) return a.created_at > b.created_at ? -1 : 1
  return a.id < b.id ? -1 : 1
}

/** The list items of rows ordered newest update first. */
export const listItems = (rowsByUpdated: readonly ConversationRow[]): ListItem[] =>
  rowsByUpdated.map(itemOf)

/** The document cached under the list key. */
export function encodeList(items: ListItem[]): string {
  const document: ListDocument = { version: VERSION, items }
  return JSON.stringify(document)
}

/** The items of a cached document; undefined when it is not a document of this version. */
export function decodeList(cached: string): ListItem[] | undefined {
  try {
    const document = JSON.parse(cached) as Partial<ListDocument> | null
    if (document?.version === VERSION && Array.isArray(document.items)) return document.items
  } catch {}
  return undefined
}

/** The response body for one page. */
export function pageOf(items: readonly ListItem[], page: ListPage): string {
  const listed = items.filter((item) => item.is_archived === page.archived)
  if (page.order === 'created') listed.sort(byCreated)
  return JSON.stringify({
    items: listed.slice(page.offset, page.offset + page.limit),
    limit: page.limit,
    offset: page.offset,
    total: listed.length,
  })
}
