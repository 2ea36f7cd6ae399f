// One conversation of a chatgpt.com conversations.json, read and checked
// (CONTRACT §17), as it will be stored: its whole tree with branches, its
// current node, times, title and archive state. Pure; throws a 422 naming the
// first bad field for a malformed conversation, and answers why it is skipped
// for one it cannot represent (no message it can keep, an id too long).
//
// Mapping nodes without a message (chatgpt.com's root) are the top of the
// tree; a node left out (no message below the root, a role this service does
// not keep) hands its children to its nearest kept ancestor. Messages are
// stored parents first, otherwise in the file's order, which for a
// chatgpt.com export (and this service's own) is creation order. A time the
// export left null is a millisecond after its parent's (or the conversation's).

import { findUnstorableText } from '../../../storable-text.ts'
import { ROOT_ID, textOf, titleFrom, turnStepTime } from '../../messages.ts'
import { importedInstructions } from './imported-instructions.ts'
import { type ImportedMessage, readMessage } from './imported-message.ts'
import {
  badField,
  booleanAt,
  checkStorable,
  childPath,
  type Fields,
  nullable,
  objectAt,
  optional,
  secondsAt,
  textAt,
} from './read-fields.ts'

/** Longest message id (the messages table's bound). */
const MAX_ID = 128
/** Longest id of a source conversation remembered for idempotency. */
const MAX_SOURCE_ID = 256
/** Longest model slug kept from an export (a catalogue's slugs are far shorter). */
const MAX_MODEL_SLUG = 128
const slugAt = (value: unknown, path: string) => {
  const slug = textAt(value, path, MAX_MODEL_SLUG)
  checkStorable(slug, path)
  return slug
}
/** Longest title kept (as a rename allows). */
const MAX_TITLE = 256

export interface StoredImport extends ImportedMessage {
  parentId: string | null
  createTime: number
  updateTime: number
}

export interface ImportedConversation {
  /** The conversation's id in the export: what makes importing it again a no-op. */
  sourceId: string
  title: string
  createTime: number
  updateTime: number
  isArchived: boolean
  currentNode: string | null
  /** The model the export says the conversation used (`default_model_slug`), if any. */
  defaultModelSlug: string | null
  /** The custom instructions it was held under (imported-instructions.ts), as the model reads them. */
  instructions: string | null
  /** Parents first. */
  messages: StoredImport[]
  /** Parts of messages left out, and nodes left out of the tree. */
  notes: { message_id: string; reason: string }[]
}

export type ConversationRead =
  | { kept: true; conversation: ImportedConversation }
  | { kept: false; sourceId: string | null; reason: string }

interface Node {
  key: string
  parent: string | null
  message: ImportedMessage | undefined
  path: string
}

/** Node keys parents first, otherwise in the file's order; throws for a cycle. */
function parentsFirst(nodes: Map<string, Node>): string[] {
  const order: string[] = []
  const placed = new Set<string>()
  const waiting = new Map<string, string[]>()
  const place = (key: string) => {
    const stack = [key]
    for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
      order.push(next)
      placed.add(next)
      stack.push(...(waiting.get(next) ?? []).reverse())
      waiting.delete(next)
    }
  }
  for (const node of nodes.values()) {
    if (node.parent === null || placed.has(node.parent)) place(node.key)
    else {
      const siblings = waiting.get(node.parent)
      if (siblings) siblings.push(node.key)
      else waiting.set(node.parent, [node.key])
    }
  }
  const stuck = [...nodes.values()].find((node) => !placed.has(node.key))
  if (stuck) throw badField(childPath(stuck.path, 'parent'), 'makes a cycle in the tree')
  return order
}

/** The title the export gave (cut to MAX_TITLE), else one from the first user message. */
function titleOf(given: string | null, messages: readonly StoredImport[], path: string): string {
  if (given !== null && given.trim() !== '') {
    checkStorable(given, path)
    return Array.from(given).slice(0, MAX_TITLE).join('')
  }
  const first = messages.find((message) => message.role === 'user' && !message.hidden)
  const parts = first?.content.parts ?? []
  return titleFrom(textOf({ parts })) || 'Imported conversation'
}

/** The conversation's id in the file (`id`, else `conversation_id`), or null when it has none that can be read. */
export function sourceIdOf(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) return null
  const fields = value as Fields
  const id = fields.id !== undefined ? fields.id : fields.conversation_id
  if (typeof id !== 'string' || id.length > MAX_SOURCE_ID || findUnstorableText(id)) return null
  return id
}

/** Reads conversation `index` of the file; `now` (Unix seconds) dates what nothing else does. */
export function readConversation(value: unknown, index: number, now: number): ConversationRead {
  const path = `[${index}]`
  const fields = objectAt(value, path)
  const idKey = fields.id !== undefined ? 'id' : 'conversation_id'
  const sourceId = textAt(fields[idKey], childPath(path, idKey), MAX_SOURCE_ID)
  checkStorable(sourceId, childPath(path, idKey))
  const skip = (reason: string): ConversationRead => ({ kept: false, sourceId, reason })
  const title = optional(fields, 'title', path, nullable(textAt), null)
  const createTime = optional(fields, 'create_time', path, secondsAt, null)
  const updateTime = optional(fields, 'update_time', path, secondsAt, null)
  const isArchived = optional(fields, 'is_archived', path, booleanAt, false)
  const currentNode = optional(fields, 'current_node', path, nullable(textAt), null)
  const defaultModelSlug = optional(fields, 'default_model_slug', path, nullable(slugAt), null)
  const mappingPath = childPath(path, 'mapping')
  const mapping = objectAt(fields.mapping, mappingPath)

  const nodes = new Map<string, Node>()
  const notes: ImportedConversation['notes'] = []
  for (const [key, raw] of Object.entries(mapping)) {
    const nodePath = childPath(mappingPath, key)
    const node = objectAt(raw, nodePath)
    const parent = optional(node, 'parent', nodePath, nullable(textAt), null)
    const rawMessage = node.message ?? null
    let message: ImportedMessage | undefined
    if (rawMessage !== null) {
      if (key.length > MAX_ID) return skip(`a message id is longer than ${MAX_ID} characters`)
      if (key === ROOT_ID) return skip(`a message has the id "${ROOT_ID}", which names the root`)
      const read = readMessage(rawMessage, childPath(nodePath, 'message'), key)
      if (read.kept) {
        message = read.message
        for (const reason of read.notes) notes.push({ message_id: key, reason })
      } else notes.push({ message_id: key, reason: `left out: ${read.reason}` })
    } else if (parent !== null)
      notes.push({ message_id: key, reason: 'left out: a node without a message below the root' })
    nodes.set(key, { key, parent, message, path: nodePath })
  }
  for (const node of nodes.values())
    if (node.parent !== null && !nodes.has(node.parent))
      throw badField(childPath(node.path, 'parent'), 'must name a node of the mapping')

  /** Each node's nearest kept ancestor-or-self, and the time its children inherit. */
  const keptAs = new Map<string, string | null>()
  const timeOf = new Map<string, number | null>()
  const messages: StoredImport[] = []
  for (const key of parentsFirst(nodes)) {
    const node = nodes.get(key) as Node
    const parentId = node.parent === null ? null : (keptAs.get(node.parent) ?? null)
    const inherited = node.parent === null ? createTime : (timeOf.get(node.parent) ?? createTime)
    if (!node.message) {
      keptAs.set(key, parentId)
      timeOf.set(key, inherited)
      continue
    }
    // A time the export left out: a step after what it follows, as a reply is (CONTRACT §17).
    const created =
      node.message.createTime ?? (inherited === null ? now : turnStepTime(inherited, 1))
    messages.push({
      ...node.message,
      parentId,
      createTime: created,
      updateTime: node.message.updateTime ?? created,
    })
    keptAs.set(key, key)
    timeOf.set(key, created)
  }
  if (messages.length === 0) return skip('it has no message this service can keep')
  const instructions = importedInstructions(messages)
  if (instructions.found && instructions.note)
    notes.push({ message_id: instructions.messageId, reason: instructions.note })

  let earliest = Number.POSITIVE_INFINITY
  let latest = 0
  for (const message of messages) {
    earliest = Math.min(earliest, message.createTime)
    latest = Math.max(latest, message.createTime, message.updateTime)
  }
  const created = createTime ?? earliest
  return {
    kept: true,
    conversation: {
      sourceId,
      title: titleOf(title, messages, childPath(path, 'title')),
      createTime: created,
      updateTime: updateTime ?? Math.max(created, latest),
      isArchived,
      currentNode:
        currentNode !== null && nodes.has(currentNode) ? (keptAs.get(currentNode) ?? null) : null,
      defaultModelSlug,
      instructions: instructions.found ? instructions.text : null,
      messages,
      notes,
    },
  }
}
