// The cached form of a user's whole conversation list, made so that any page in
// either order is answered by slicing strings, with no JSON parsing or
// re-encoding of items on a cache hit. It is still one valid JSON document:
//
//   {"total":3,"created_order":[2,0,1],"items":[
//   {"id":…},            <- items by update time, newest first, one per line
//   {"id":…}
//   ]}
//
// JSON.stringify never emits a raw newline, so lines separate items safely.

import type { ConversationRow } from './conversations-repository.ts'
import { textOf } from './messages.ts'

export type ListOrder = 'updated' | 'created'

export interface ListPage {
  offset: number
  limit: number
  order: ListOrder
}

const HEADER_END = '"items":['

function encodeItem(row: ConversationRow): string {
  return JSON.stringify({
    id: row.id,
    title: row.title,
    last_message: row.lastContent ? textOf(row.lastContent) : '',
    updated_at: row.updatedAt.toISOString(),
  })
}

/** Encodes rows (newest update first) into the cached document. */
export function encodeList(rowsByUpdated: readonly ConversationRow[]): string {
  const createdOrder = rowsByUpdated
    .map((row, index) => ({ index, created: row.createdAt.getTime(), id: row.id }))
    .sort((a, b) => b.created - a.created || (a.id < b.id ? -1 : 1))
    .map((entry) => entry.index)
  const header = `{"total":${rowsByUpdated.length},"created_order":${JSON.stringify(createdOrder)},${HEADER_END}`
  const items = rowsByUpdated.map(encodeItem).join(',\n')
  return items === '' ? `${header}\n]}` : `${header}\n${items}\n]}`
}

/** The response body for one page, cut from the cached document. */
export function pageFromList(cached: string, page: ListPage): string {
  const lines = cached.split('\n')
  const header = lines[0] ?? ''
  const items = lines.slice(1, -1).map((line) => (line.endsWith(',') ? line.slice(0, -1) : line))
  const order =
    page.order === 'updated'
      ? items
      : (
          JSON.parse(
            header.slice(header.indexOf('"created_order":') + 16, header.indexOf(`,${HEADER_END}`)),
          ) as number[]
        ).map((index) => items[index] as string)
  const slice = order.slice(page.offset, page.offset + page.limit)
  return `{"items":[${slice.join(',')}],"limit":${page.limit},"offset":${page.offset},"total":${items.length}}`
}
