// The `default_model_slug` of a conversation's detail (CONTRACT §17), decided
// in this one place: for now the model of the newest reply on the current
// branch, else the configured model. Once conversations store the model they
// are routed to, this is where the detail reads it instead.
import type { TreeRow } from './tree-repository.ts'

/** The slug of the model the conversation answers with, from its current branch (top first). */
export function defaultModelSlug(branch: readonly TreeRow[], configured: string): string {
  for (let index = branch.length - 1; index >= 0; index--) {
    const row = branch[index] as TreeRow
    const slug = row.metadata.model_slug
    if (row.role === 'assistant' && typeof slug === 'string' && slug !== '') return slug
  }
  return configured
}
