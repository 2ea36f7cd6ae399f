// A stored multimodal user message and its files as the content of one OpenAI
// chat message (CONTRACT §20): text parts as text, images as `image_url` parts
// holding data URLs (only for a model whose catalogue entry has vision; for
// another a 422 naming it), and each attached document's extracted text as a
// text part, cut to fit a token budget with a note saying so. Pure: the
// caller reads the files (FileService.resolveAttachments) and counts tokens
// with the model's own tokenizer.
import { invalid } from '../errors.ts'
import { fileIdOf, type MultimodalPart } from './multimodal-message.ts'

export type OpenAiContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string } }

export interface ResolvedFile {
  id: string
  name: string
  mimeType: string
  /** A document's text; null for an image. */
  text: string | null
  /** An image's bytes. */
  bytes?: Uint8Array
}

export interface ModelContentOptions {
  model: { slug: string; vision: boolean }
  /** Tokens all the message's documents may take together. */
  documentTokens: number
  countTokens(text: string): number
}

/** The largest prefix of text (cut at a character) whose tokens fit budget. */
function prefixWithin(text: string, budget: number, count: (text: string) => number): string {
  if (count(text) <= budget) return text
  let low = 0
  let high = text.length
  // Binary search on the length: tokens grow with it.
  while (low < high) {
    const middle = Math.ceil((low + high) / 2)
    if (count(text.slice(0, middle)) <= budget) low = middle
    else high = middle - 1
  }
  return text.slice(0, low).toWellFormed()
}

/** The 422 of images sent to a model whose catalogue entry lacks `vision: true`. */
export const modelWithoutVision = (slug: string) =>
  invalid(
    `The model "${slug}" cannot see images: pick a model with vision, or send the message without them.`,
    'model_without_vision',
  )

const documentHeader = (file: ResolvedFile) => `Attached document "${file.name}":\n\n`

/**
 * The OpenAI content of a message with parts and the files it names (images
 * by their parts, documents by `metadata.attachments`): images where their
 * parts are, then the documents in the order given.
 */
export function toModelContent(
  parts: readonly MultimodalPart[],
  files: readonly ResolvedFile[],
  options: ModelContentOptions,
): OpenAiContentPart[] {
  const byId = new Map(files.map((file) => [file.id, file]))
  const content: OpenAiContentPart[] = []
  for (const part of parts) {
    if (typeof part === 'string') {
      if (part !== '') content.push({ type: 'text', text: part })
      continue
    }
    const file = byId.get(fileIdOf(part.asset_pointer) ?? '')
    if (!file?.bytes) continue
    if (!options.model.vision) throw modelWithoutVision(options.model.slug)
    const data = Buffer.from(file.bytes).toString('base64')
    content.push({ type: 'image_url', image_url: { url: `data:${file.mimeType};base64,${data}` } })
  }
  let budget = options.documentTokens
  for (const file of files) {
    if (file.text === null) continue
    const header = documentHeader(file)
    const whole = header + file.text
    const cost = options.countTokens(whole)
    if (cost <= budget) {
      content.push({ type: 'text', text: whole })
      budget -= cost
      continue
    }
    const note = `\n\n[The document "${file.name}" was cut to fit the model's context: this is its beginning only.]`
    const room = budget - options.countTokens(header + note)
    const kept = room > 0 ? prefixWithin(file.text, room, options.countTokens) : ''
    content.push({
      type: 'text',
      text:
        kept === ''
          ? `[The document "${file.name}" is attached but did not fit the model's context.]`
          : header + kept + note,
    })
    budget = 0
  }
  return content
}
