// A send's input message read into what is stored (CONTRACT §9, §20): text
// parts, or chatgpt.com's `multimodal_text` parts with image asset pointers,
// and the files `metadata.attachments` lists (gpt4free sends them with
// `multimodal_text`; chatgpt.com lists documents on `text` messages too).
// Pure: which files it names is checked against the sender's own before
// anything is stored (turn/attachments.ts).
import { invalid } from '../errors.ts'
import { type Attachment, fileIdOf, readMultimodalMessage } from '../files/multimodal-message.ts'
import type { UserContent } from './messages.ts'

/** An input message's content as the schema let it through: parts are texts or objects. */
export interface RawContent {
  content_type: 'text' | 'multimodal_text'
  parts: readonly unknown[]
}

export interface InputContent {
  content: UserContent
  /** Its `metadata.attachments`, checked; empty when it lists none. */
  attachments: Attachment[]
  /** Every file it names, once each, in order. */
  fileIds: string[]
  /** The files its image parts point at: what a model must see. */
  imageIds: string[]
}

/** The content of `messages[index]`; `invalid` (422) naming the first bad field. */
export function readInputContent(raw: RawContent, metadata: unknown, index: number): InputContent {
  const field = `messages[${index}]`
  if (raw.content_type === 'text') {
    raw.parts.forEach((part, at) => {
      if (typeof part !== 'string')
        throw invalid(
          `The field "${field}.content.parts[${at}]" must be a text (images go in a "multimodal_text" message).`,
        )
    })
    const parts = raw.parts as string[]
    const listed = readAttachments(parts, metadata, field)
    return {
      content: { content_type: 'text', parts },
      attachments: listed.attachments,
      fileIds: listed.fileIds,
      imageIds: [],
    }
  }
  const read = readMultimodalMessage(raw, metadata, field)
  const imageIds = read.parts.flatMap((part) =>
    typeof part === 'string' ? [] : [fileIdOf(part.asset_pointer) ?? ''],
  )
  return {
    content: { content_type: 'multimodal_text', parts: read.parts },
    attachments: read.attachments,
    fileIds: read.fileIds,
    imageIds: [...new Set(imageIds)],
  }
}

/** A text message's attachments, read as a multimodal message's are. */
function readAttachments(parts: string[], metadata: unknown, field: string) {
  const listed = (metadata as { attachments?: unknown } | null | undefined)?.attachments
  if (listed === undefined || typeof metadata !== 'object') return { attachments: [], fileIds: [] }
  return readMultimodalMessage({ content_type: 'multimodal_text', parts }, metadata, field)
}
