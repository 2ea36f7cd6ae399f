// Pages cut from cached list documents (list-cache.ts), kept while the cache
// keeps answering with the same document. A list hit otherwise splits and
// parses the whole document and joins the page's items again on every read;
// served from the near cache, that was a third of a list hit's CPU. An entry is
// used only when the document the cache returned now is the one it was cut
// from (equal text), so a changed or deleted list is never served from here.
// Bounded in bytes (LRU), counting each document twice (the document and its
// decoded items); the few pages kept per document (at most 4, each shorter
// than it) are not counted.
import { LRUCache } from 'lru-cache'
import { type CachedList, decodeList, type ListPage, pageOf } from './list-cache.ts'

/** Pages kept per document: a front-end reads a few (first page, archived, next). */
const PAGES_PER_DOCUMENT = 4

interface Entry {
  document: string
  list: CachedList
  pages: Map<string, string>
}

export type ListPages = (key: string, document: string, page: ListPage) => string | undefined

/** `(key, document, page)` → the page's body, or undefined when `document` is not a list document. */
export function createListPages(maxBytes = 4 * 2 ** 20): ListPages {
  const entries = new LRUCache<string, Entry>({
    maxSize: maxBytes,
    // UTF-16 code units of 2 bytes, for the document and its items.
    sizeCalculation: (entry) => Math.max(1, entry.document.length * 4),
  })
  return (key, document, page) => {
    let entry = entries.get(key)
    if (entry === undefined || entry.document !== document) {
      const list = decodeList(document)
      if (!list) return undefined
      entry = { document, list, pages: new Map() }
      entries.set(key, entry)
    }
    const pageKey = `${page.order}:${page.archived}:${page.offset}:${page.limit}`
    let body = entry.pages.get(pageKey)
    if (body === undefined) {
      body = pageOf(entry.list, page)
      if (entry.pages.size < PAGES_PER_DOCUMENT) entry.pages.set(pageKey, body)
    }
    return body
  }
}
