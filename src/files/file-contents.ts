// What an upload holds, read once when the client says it is done (CONTRACT
// §20): its type from the bytes, an image's dimensions, a document's text
// (UTF-8 text as it is, a PDF's through pdf-text.ts). A file whose contents
// cannot be read is refused here, so a stored file is always usable.
import { imageSize } from 'image-size'
import { invalid } from '../errors.ts'
import { type FileKind, sniffType, textOf } from './file-types.ts'
import { extractPdfText } from './pdf-text.ts'

export interface FileContents {
  kind: FileKind
  mime: string
  width?: number
  height?: number
  /** A document's text; undefined for an image. */
  text?: string
}

export interface ReadOptions {
  /** Longest a PDF's text extraction may take. */
  pdfTimeoutMs: number
  /** Most characters of text kept from a PDF. */
  maxTextChars: number
}

export async function readContents(
  bytes: Uint8Array,
  name: string,
  options: ReadOptions,
): Promise<FileContents> {
  const { kind, mime } = await sniffType(bytes, name)
  if (kind === 'image') {
    let size: ReturnType<typeof imageSize>
    try {
      size = imageSize(bytes)
    } catch {
      throw invalid('The image could not be read: it is damaged.', 'file_unreadable')
    }
    return { kind, mime, width: size.width, height: size.height }
  }
  if (kind === 'pdf') {
    const text = await extractPdfText(bytes, {
      timeoutMs: options.pdfTimeoutMs,
      maxChars: options.maxTextChars,
    })
    return { kind, mime, text: storable(text) }
  }
  // sniffType found it to be UTF-8 text; a byte order mark is not part of it.
  return { kind, mime, text: (textOf(bytes) ?? '').replace(/^\uFEFF/, '') }
}

/** Text Postgres can hold: a PDF may yield NULs or lone surrogates. */
const storable = (text: string) => text.replace(/\0/g, '').toWellFormed()
