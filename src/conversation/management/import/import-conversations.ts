// The import (CONTRACT §17, §19, §23): a chatgpt.com conversations.json,
// arriving as bytes, stored as the user's conversations as the file is read
// (json-array-splitter.ts). Conversations are read as they complete and
// stored a bounded batch per transaction (import-repository.ts); between
// batches the import lets the event loop run, so the requests of other users
// are served (PGlite runs one query at a time, and a loop that never yields
// also keeps the garbage collector's timers from running, which let one 8 MB
// import grow a server by 800 MiB: issue #29). Memory holds one batch, not
// the file.
//
// A conversation it cannot read (not JSON, not an object, a field of the
// wrong type, a broken tree, too large) is skipped with the reason, naming
// its first bad field; the rest are imported. Each conversation is checked
// whole before any of it is stored, and stored whole or not at all. A
// conversation imported before (by its id in the file) is skipped, so
// importing a file twice stores nothing new. Only a file that is no array
// (or breaks off) stops the import with an error, which says how many were
// imported before it; importing the corrected file again adds only the rest.
import { DomainError } from '../../../errors.ts'
import type { Cache } from '../../../storage/cache.ts'
import type { Db } from '../../../storage/db.ts'
import { unixSeconds } from '../../messages.ts'
import { listKey } from '../../reads/cache-keys.ts'
import { type ConversationRead, readConversation, sourceIdOf } from './chatgpt-conversation.ts'
import { storeImports } from './import-repository.ts'
import { type ArrayElement, JsonArraySplitter } from './json-array-splitter.ts'
import { badField } from './read-fields.ts'

export interface ImportDeps {
  db: Db
  cache: Cache
  newId: () => string
  warn: (message: string, error: unknown) => void
}

/**
 * What was left out: a whole conversation, or part of an imported one (with
 * `message_id`). `id` is the conversation's id in the file (`id`, else
 * `conversation_id`), null when it has none that can be read; `index` is its
 * position in the file's array, from 0, which names it either way.
 */
export interface Skipped {
  id: string | null
  index: number
  message_id?: string
  reason: string
}

export interface ImportReport {
  imported: number
  skipped: Skipped[]
}

/** Largest conversation read: parsing one costs several times its size in memory (CONTRACT §19). */
export const MAX_CONVERSATION_BYTES = 16 * 2 ** 20
/** Conversations stored per transaction, at most. */
const BATCH_CONVERSATIONS = 8
/** Bytes of the file read into one batch, at most (a conversation larger than this is a batch alone). */
const BATCH_BYTES = 256 * 1024

const UTF8 = new TextDecoder('utf-8', { fatal: true })

/** The parsed JSON of one element; a 422 naming it when it is not JSON. */
function parsed(element: ArrayElement & { bytes: Uint8Array }): unknown {
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

/** One element read: the conversation to store, or why it is skipped. */
type Entry = { index: number } & ConversationRead

/** Reads one element of the file; a conversation that cannot be read is skipped with the reason. */
function readElement(element: ArrayElement): Entry {
  const { index } = element
  if (element.bytes === undefined)
    return {
      index,
      kept: false,
      sourceId: null,
      reason: `it is larger than ${MAX_CONVERSATION_BYTES / 2 ** 20} MiB (${element.size} bytes)`,
    }
  let value: unknown
  try {
    value = parsed(element)
    return { index, ...readConversation(value, index, unixSeconds()) }
  } catch (error) {
    if (!(error instanceof DomainError)) throw error
    return { index, kept: false, sourceId: sourceIdOf(value), reason: error.detail }
  }
}

/** Bytes of the file read between two collections the import asks for. */
const COLLECT_EVERY_BYTES = 2 ** 20

/** Lets the event loop serve what waits (requests, timers, the collector) before the next batch. */
const letOthersRun = () => new Promise<void>((resolve) => setImmediate(resolve))

/** Stores the conversations of `file` (the bytes of a conversations.json) as the user's. */
export async function importConversations(
  deps: ImportDeps,
  userId: string,
  file: AsyncIterable<Uint8Array>,
): Promise<ImportReport> {
  const splitter = new JsonArraySplitter(MAX_CONVERSATION_BYTES)
  const report: ImportReport = { imported: 0, skipped: [] }
  let batch: Entry[] = []
  let batchBytes = 0
  let uncollected = 0

  /** Stores the batch's readable conversations in one transaction, and reports the batch in file order. */
  async function flush() {
    const entries = batch
    batch = []
    batchBytes = 0
    const kept = entries.flatMap((entry) => (entry.kept ? [entry.conversation] : []))
    const outcomes = kept.length > 0 ? await storeImports(deps.db, userId, kept, deps.newId) : []
    let next = 0
    for (const entry of entries) {
      const { index } = entry
      if (!entry.kept) {
        report.skipped.push({ id: entry.sourceId, index, reason: entry.reason })
        continue
      }
      const { conversation } = entry
      const outcome = outcomes[next++]
      if (!outcome?.stored) {
        report.skipped.push({ id: conversation.sourceId, index, reason: outcome?.reason ?? '' })
        continue
      }
      report.imported++
      for (const note of conversation.notes)
        report.skipped.push({ id: conversation.sourceId, index, ...note })
    }
    // Reading and storing leave several times the file's size of garbage, which
    // the collector's own pacing lets pile up by hundreds of MiB (CONTRACT §19).
    if (uncollected >= COLLECT_EVERY_BYTES) {
      uncollected = 0
      Bun.gc(true)
    }
    await letOthersRun()
  }

  try {
    for await (const chunk of file)
      for (const element of splitter.push(chunk)) {
        batch.push(readElement(element))
        batchBytes += element.size
        uncollected += element.size
        if (batch.length >= BATCH_CONVERSATIONS || batchBytes >= BATCH_BYTES) await flush()
      }
    splitter.end()
    await flush()
  } catch (error) {
    if (!(error instanceof DomainError)) throw error
    // The file breaks off (or grows past the limit) after these: they are kept, as those before them are.
    await flush()
    if (report.imported === 0) throw error
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
