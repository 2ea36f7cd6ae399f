// One message of an imported chatgpt.com conversation (CONTRACT §17), read
// and checked: kept as its export had it (role, content, status, times, what
// chatgpt.com says of it, image asset pointers and `metadata.attachments`,
// CONTRACT §20), except what this service cannot hold - other kinds of parts
// (audio, tool assets: their files are not in conversations.json; the text
// parts stay), metadata beyond the public keys, and an `in_progress`
// status (a reply still streaming here is a queued turn; an imported one
// never finished: `finished_partial_completion`). System and tool messages,
// messages to a tool, those chatgpt.com hid and those that are not text are
// marked hidden: kept in the tree, never in a model's context.

import type { MessageContent, MessageRole } from '../../messages.ts'
import type { MessageWire } from '../../sql/tree-repository.ts'
import { publicMetadata } from '../../tree/mapping-message.ts'
import {
  arrayAt,
  badField,
  booleanAt,
  checkStorable,
  childPath,
  type Fields,
  nullable,
  numberAt,
  objectAt,
  optional,
  secondsAt,
  textAt,
} from './read-fields.ts'

const ROLES: readonly string[] = ['user', 'assistant', 'system', 'tool'] satisfies MessageRole[]
const TEXT_TYPES = new Set(['text', 'multimodal_text'])
/** Longest status, recipient, channel or author name kept (chatgpt.com's are short words). */
const MAX_WORD = 256

export interface ImportedMessage {
  id: string
  role: MessageRole
  content: MessageContent
  status: string
  metadata: Record<string, unknown>
  createTime: number | null
  updateTime: number | null
  wire: MessageWire
  hidden: boolean
}

/** A message read, with what of it was left out; or why the whole node was. */
export type MessageRead =
  | { kept: true; message: ImportedMessage; notes: string[] }
  | { kept: false; reason: string }

const word = (value: unknown, path: string) => textAt(value, path, MAX_WORD)

/** What the kinds of the parts left out are: an asset's content_type, else its JSON type. */
function kindOf(part: unknown): string {
  if (typeof part === 'object' && part !== null && !Array.isArray(part)) {
    const type = (part as Fields).content_type
    if (typeof type === 'string' && type.length <= MAX_WORD) return type
    return 'object'
  }
  return Array.isArray(part) ? 'array' : typeof part
}

/** A part kept as it was: text, or an image asset pointer (its file may be gone; the pointer stays). */
const isKeptPart = (part: unknown) =>
  typeof part === 'string' ||
  (typeof part === 'object' &&
    part !== null &&
    !Array.isArray(part) &&
    (part as Fields).content_type === 'image_asset_pointer' &&
    typeof (part as Fields).asset_pointer === 'string')

/**
 * Text content keeps its string parts and image pointers (text content must
 * have parts); other content is kept as it was, but for other parts: those
 * are attachments whose files conversations.json does not hold.
 */
function readContent(
  fields: Fields,
  type: string,
  path: string,
): { content: MessageContent; notes: string[] } {
  const isText = TEXT_TYPES.has(type)
  if (!isText && fields.parts === undefined) return { content: fields as MessageContent, notes: [] }
  const parts = arrayAt(fields.parts, childPath(path, 'parts'))
  const kept = parts.filter(isKeptPart) as (string | Fields)[]
  const left = parts.filter((part) => !isKeptPart(part)).map(kindOf)
  const notes =
    left.length === 0
      ? []
      : [
          `${left.length} attachment part(s) (${[...new Set(left)].join(', ')}) not imported: only the text is kept`,
        ]
  const content = isText
    ? { content_type: type, parts: kept }
    : { ...fields, content_type: type, parts: kept }
  return { content, notes }
}

/** Reads the message of the mapping node `key`; throws a 422 naming the first bad field. */
export function readMessage(value: unknown, path: string, key: string): MessageRead {
  const message = objectAt(value, path)
  const id = textAt(message.id, childPath(path, 'id'))
  if (id !== key) throw badField(childPath(path, 'id'), 'must be the key of its mapping node')
  const authorPath = childPath(path, 'author')
  const author = objectAt(message.author, authorPath)
  const role = word(author.role, childPath(authorPath, 'role'))
  if (!ROLES.includes(role))
    return { kept: false, reason: `its author role "${role}" is not one this service keeps` }
  const contentPath = childPath(path, 'content')
  const contentFields = objectAt(message.content, contentPath)
  const type = word(contentFields.content_type, childPath(contentPath, 'content_type'))
  const { content, notes } = readContent(contentFields, type, contentPath)

  const metadataPath = childPath(path, 'metadata')
  const metadata = publicMetadata(optional(message, 'metadata', path, objectAt, {}))
  const status = optional(message, 'status', path, word, 'finished_successfully')
  const wire: MessageWire = {
    author_name: optional(author, 'name', authorPath, nullable(word), null),
    author_metadata: optional(author, 'metadata', authorPath, objectAt, {}),
    end_turn: optional(message, 'end_turn', path, nullable(booleanAt), null),
    weight: optional(message, 'weight', path, numberAt, 1),
    recipient: optional(message, 'recipient', path, word, 'all'),
    channel: optional(message, 'channel', path, nullable(word), null),
  }
  checkStorable(id, childPath(path, 'id'))
  checkStorable(content, contentPath)
  checkStorable(metadata, metadataPath)
  checkStorable(wire.author_metadata, childPath(authorPath, 'metadata'))
  for (const [field, text] of [
    ['status', status],
    ['recipient', wire.recipient],
    ['channel', wire.channel],
  ] as const)
    if (text !== null) checkStorable(text, childPath(path, field))
  if (wire.author_name !== null) checkStorable(wire.author_name, childPath(authorPath, 'name'))

  const hidden =
    role === 'system' ||
    role === 'tool' ||
    wire.recipient !== 'all' ||
    metadata.is_visually_hidden_from_conversation === true ||
    !TEXT_TYPES.has(type)
  return {
    kept: true,
    message: {
      id,
      role: role as MessageRole,
      content,
      status: status === 'in_progress' ? 'finished_partial_completion' : status,
      metadata,
      createTime: optional(message, 'create_time', path, secondsAt, null),
      updateTime: optional(message, 'update_time', path, secondsAt, null),
      wire,
      hidden,
    },
    notes,
  }
}
