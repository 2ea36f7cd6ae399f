// A chatgpt.com `multimodal_text` user message (CONTRACT §20), read without
// trusting it: `parts` are text strings and image asset pointers
// (`{"content_type":"image_asset_pointer","asset_pointer":"file-service://<file_id>",
// "size_bytes","width","height"}`; gpt4free's create_messages leaves out the
// part's content_type, which is accepted), and `metadata.attachments` names
// every attached file (`{"id","name","mimeType","size","width?","height?"}`).
// Pure: it says which files the message needs; the caller checks that each is
// the sender's (FileService.resolveAttachments) before anything is stored.
import { invalid } from '../errors.ts'

export interface ImagePart {
  content_type: 'image_asset_pointer'
  asset_pointer: string
  size_bytes?: number | null
  width?: number | null
  height?: number | null
}

export type MultimodalPart = string | ImagePart

export interface Attachment {
  id: string
  name?: string
  mimeType?: string
  size?: number
  width?: number
  height?: number
}

export interface MultimodalMessage {
  /** The parts as they are to be stored: every image part with its content_type. */
  parts: MultimodalPart[]
  attachments: Attachment[]
  /** Every file the message needs: its images' and its attachments', once each, in order. */
  fileIds: string[]
}

const POINTER = /^file-service:\/\/(file-[A-Za-z0-9_-]{1,64})$/
const MAX_PARTS = 32
const MAX_ATTACHMENTS = 10

type Fields = Record<string, unknown>
const isObject = (value: unknown): value is Fields =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** The file id of a `file-service://` pointer, or undefined. */
export const fileIdOf = (pointer: string) => POINTER.exec(pointer)?.[1]

const optionalNumber = (value: unknown, field: string) => {
  if (value === undefined || value === null) return value
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0)
    throw invalid(`The field "${field}" must be a number of at least 0.`)
  return value
}

function imagePart(part: Fields, field: string): ImagePart {
  const type = part.content_type
  if (type !== undefined && type !== 'image_asset_pointer')
    throw invalid(`The field "${field}.content_type" must be "image_asset_pointer".`)
  const pointer = part.asset_pointer
  if (typeof pointer !== 'string' || fileIdOf(pointer) === undefined)
    throw invalid(`The field "${field}.asset_pointer" must be "file-service://<file_id>".`)
  return {
    content_type: 'image_asset_pointer',
    asset_pointer: pointer,
    size_bytes: optionalNumber(part.size_bytes, `${field}.size_bytes`),
    width: optionalNumber(part.width, `${field}.width`),
    height: optionalNumber(part.height, `${field}.height`),
  }
}

function attachment(value: unknown, field: string): Attachment {
  if (
    !isObject(value) ||
    typeof value.id !== 'string' ||
    !/^file-[A-Za-z0-9_-]{1,64}$/.test(value.id)
  )
    throw invalid(`The field "${field}.id" must be a file id.`)
  const name = value.name
  if (name !== undefined && (typeof name !== 'string' || name.length > 255))
    throw invalid(`The field "${field}.name" must be a text of at most 255 characters.`)
  const mimeType = value.mimeType
  if (mimeType !== undefined && (typeof mimeType !== 'string' || mimeType.length > 255))
    throw invalid(`The field "${field}.mimeType" must be a text of at most 255 characters.`)
  const numbers = Object.fromEntries(
    (['size', 'width', 'height'] as const).flatMap((key) => {
      const number = optionalNumber(value[key], `${field}.${key}`)
      return typeof number === 'number' ? [[key, number]] : []
    }),
  )
  return {
    id: value.id,
    ...(typeof name === 'string' ? { name } : {}),
    ...(typeof mimeType === 'string' ? { mimeType } : {}),
    ...numbers,
  }
}

/**
 * The message's parts and attachments, checked; `invalid` (422) naming the
 * first bad field. `field` is the message's path in the body (`messages[0]`).
 */
export function readMultimodalMessage(
  content: unknown,
  metadata: unknown,
  field: string,
): MultimodalMessage {
  if (!isObject(content) || content.content_type !== 'multimodal_text')
    throw invalid(`The field "${field}.content.content_type" must be "multimodal_text".`)
  const raw = content.parts
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_PARTS)
    throw invalid(`The field "${field}.content.parts" must hold 1 to ${MAX_PARTS} parts.`)
  const parts = raw.map((part, index): MultimodalPart => {
    const where = `${field}.content.parts[${index}]`
    if (typeof part === 'string') return part
    if (isObject(part)) return imagePart(part, where)
    throw invalid(`The field "${where}" must be a text or an image asset pointer.`)
  })
  const listed = isObject(metadata) ? metadata.attachments : undefined
  if (listed !== undefined && (!Array.isArray(listed) || listed.length > MAX_ATTACHMENTS))
    throw invalid(
      `The field "${field}.metadata.attachments" must be a list of at most ${MAX_ATTACHMENTS} files.`,
    )
  const attachments = (listed ?? []).map((item, index) =>
    attachment(item, `${field}.metadata.attachments[${index}]`),
  )
  const ids = [
    ...parts.flatMap((part) => (typeof part === 'string' ? [] : [fileIdOf(part.asset_pointer)])),
    ...attachments.map((item) => item.id),
  ].filter((id): id is string => id !== undefined)
  return { parts, attachments, fileIds: [...new Set(ids)] }
}
