// The dedupe identity of a document: hex SHA-256 of its UTF-8 content. The
// migration computes the same digest in SQL for the preloaded rows.
import { createHash } from 'node:crypto'

export function contentSha256(content: string): string {
  return createHash('sha256').update(content, 'utf8').digest('hex')
}
