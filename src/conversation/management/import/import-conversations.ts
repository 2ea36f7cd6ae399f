// The import (CONTRACT §17): a chatgpt.com conversations.json, arriving as
// bytes, stored as the user's conversations one at a time as the file is read
// (json-array-splitter.ts), so memory holds one conversation, not the file.
// Each conversation is checked whole before any of it is stored, then stored
// whole in one transaction. It answers how many were imported and what was
// skipped, with why; a conversation imported before (by its id in the file)
// is skipped, so importing a file twice stores nothing new. A malformed
// conversation stops the import with a 422 naming its first bad field:
// nothing of it is stored, and the error says how many before it were, which
// importing the corrected file again leaves as they are.
import { DomainError } from '../../../errors.ts'
import type { Cache } from '../../../storage/cache.ts'
import type { Db } from '../../../storage/db.ts'
import { unixSeconds } from '../../messages.ts'
import { listKey } from '../../reads/cache-keys.ts'
import { readConversation } from './chatgpt-conversation.ts'
import { placeImport, storeImport } from './import-repository.ts'
import { type ArrayElement, JsonArraySplitter } from './json-array-splitter.ts'
import { badField } from './read-fields.ts'

export interface ImportDeps {
  db: Db
  cache: Cache
  newId: () => string
  warn: (message: string, error: unknown) => void
}

/** What was left out: a whole conversation (`id`, its id in the file), or part of one (with `message_id`). */
export interface Skipped {
  id: string
  message_id?: string
  reason: string
}

export interface ImportReport {
  imported: number
  skipped: Skipped[]
}

const UTF8 = new TextDecoder('utf-8', { fatal: true })

/** The parsed JSON of one element; a 422 naming it when it is not JSON. */
function parsed(element: ArrayElement): unknown {
  const path = `[${element.index}]`
  let text: string
  try {
    text = UTF8.decode(element.bytes)
  } catch {
    throw badField(path, 'is not valid UTF-8')
  }
  try {
    return JSON.parse(text)
  } catch {
    throw badField(path, 'is not valid JSON')
  }
}

/** Stores the conversations of `file` (the bytes of a conversations.json) as the user's. */
export async function importConversations(
  deps: ImportDeps,
  userId: string,
  file: AsyncIterable<Uint8Array>,
): Promise<ImportReport> {
  const splitter = new JsonArraySplitter()
  const report: ImportReport = { imported: 0, skipped: [] }

  async function importOne(element: ArrayElement) {
    const read = readConversation(parsed(element), element.index, unixSeconds())
    if (!read.kept) {
      report.skipped.push({ id: read.sourceId, reason: read.reason })
      return
    }
    const { conversation } = read
    const place = await placeImport(deps.db, userId, conversation.sourceId, deps.newId)
    const stored =
      place.store && (await storeImport(deps.db, userId, place.conversationId, conversation))
    if (!stored) {
      report.skipped.push({
        id: conversation.sourceId,
        reason: place.store ? 'already imported' : place.reason,
      })
      return
    }
    report.imported++
    for (const note of conversation.notes)
      report.skipped.push({ id: conversation.sourceId, ...note })
  }

  try {
    for await (const chunk of file)
      for (const element of splitter.push(chunk)) await importOne(element)
    splitter.end()
  } catch (error) {
    if (report.imported === 0 || !(error instanceof DomainError)) throw error
    throw new DomainError(
      error.kind,
      `${error.detail} The ${report.imported} conversation(s) before it were imported; importing the corrected file again adds only the rest.`,
      { code: error.code },
    )
  } finally {
    // The list shows the new conversations (they have no cached detail yet).
    if (report.imported > 0)
      await deps.cache
        .del(listKey(userId))
        .catch((error) => deps.warn('could not invalidate cached reads', error))
  }
  return report
}
