// The `default_model_slug` of a conversation's detail (CONTRACT §15, §17),
// decided in this one place: the model the conversation stores (the one its
// sends are routed to), else - for a conversation stored before it kept one -
// the model of the newest reply on the current branch, else the catalogue's
// default.
import type { TreeRow } from '../sql/tree-repository.ts'

/** The slug of the model the conversation answers with: stored, else from its current branch (top first). */
export function defaultModelSlug(
  stored: string | null,
  branch: readonly TreeRow[],
  configured: string,
): string {
  if (stored) return stored
  for (let index = branch.length - 1; index >= 0; index--) {
    const row = branch[index] as TreeRow
    const slug = row.metadata.model_slug
    if (row.role === 'assistant' && typeof slug === 'string' && slug !== '') return slug
  }
  return configured
}
