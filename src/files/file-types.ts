// What an uploaded file is, read from its bytes and never from its name or the
// type a client declares (CONTRACT §20): an image a vision model takes (PNG,
// JPEG, GIF, WebP), a PDF, or UTF-8 text (plain, Markdown, code, CSV, JSON).
// Anything else (an archive, an executable, a format this service cannot read)
// is a 415. The name only tells kinds of text apart.
import { fileTypeFromBuffer } from 'file-type'
import { unsupportedType } from '../errors.ts'

export type FileKind = 'image' | 'pdf' | 'text'

export interface SniffedType {
  kind: FileKind
  mime: string
}

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp'])

/**
 * How much of a file the signature check reads: enough for every format
 * file-type knows, and it never inflates a whole archive (a zip bomb is a
 * zip, refused, not unpacked).
 */
const SNIFF_BYTES = 64 * 1024

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false })

const TEXT_TYPES: Record<string, string> = {
  md: 'text/markdown',
  markdown: 'text/markdown',
  csv: 'text/csv',
  json: 'application/json',
}

const cannotUse = (what: string) =>
  unsupportedType(
    `${what} cannot be used: attach an image (PNG, JPEG, GIF, WebP), a PDF, or a text file (plain text, Markdown, code, CSV, JSON).`,
  )

/** The text of bytes that are UTF-8 text (no NUL, which no text file holds), else undefined. */
export function textOf(bytes: Uint8Array): string | undefined {
  if (bytes.includes(0)) return undefined
  try {
    return UTF8.decode(bytes)
  } catch {
    return undefined
  }
}

/** The file's kind and type; `unsupported_type` (415) for anything this service cannot use. */
export async function sniffType(bytes: Uint8Array, name: string): Promise<SniffedType> {
  if (bytes.byteLength === 0) throw cannotUse('An empty file')
  const found = await fileTypeFromBuffer(bytes.subarray(0, SNIFF_BYTES))
  if (found) {
    if (IMAGE_TYPES.has(found.mime)) return { kind: 'image', mime: found.mime }
    if (found.mime === 'application/pdf') return { kind: 'pdf', mime: found.mime }
    throw cannotUse(`A file of type ${found.mime}`)
  }
  if (textOf(bytes) === undefined) throw cannotUse('A binary file of an unknown type')
  const extension = /\.([A-Za-z0-9]{1,16})$/.exec(name)?.[1]?.toLowerCase() ?? ''
  return { kind: 'text', mime: TEXT_TYPES[extension] ?? 'text/plain' }
}

/** The content type the bytes are served with: text always as UTF-8. */
export const servedType = (mime: string) =>
  mime.startsWith('text/') || mime === 'application/json' ? `${mime}; charset=utf-8` : mime
