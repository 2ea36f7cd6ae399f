// The conversation detail (CONTRACT §4.6, §10, §17), built from the stored
// tree (pure): chatgpt.com's conversation object, the same one its data
// export holds in conversations.json (so the export is a list of these), plus
// this API's own `conversation_id` and `messages` (the current branch, from
// the top of the tree down to the current node, each with its `parent_id`).
// `mapping` holds every message under a `client-created-root` node, keys in
// creation order, the root first.

import { ROOT_ID } from '../messages.ts'
import type { ConversationHead, TreeRow } from '../sql/tree-repository.ts'
import { defaultModelSlug } from './default-model-slug.ts'
import { type MappingMessage, mappingMessage } from './mapping-message.ts'

interface MappingNode {
  id: string
  parent: string | null
  children: string[]
  message: MappingMessage | null
}

/** The current branch, top first: from `currentNode` up its parents (rows in creation order). */
function branchOf(rows: readonly TreeRow[], currentNode: string | null): TreeRow[] {
  const byId = new Map(rows.map((row) => [row.id, row]))
  const branch: TreeRow[] = []
  let node = byId.get(currentNode ?? '') ?? rows.at(-1)
  // Bounded by the row count: a tree has no cycles, but a bad row must not hang a read.
  while (node && branch.length < rows.length) {
    branch.push(node)
    node = node.parentId === null ? undefined : byId.get(node.parentId)
  }
  return branch.reverse()
}

function mappingOf(rows: readonly TreeRow[]): Record<string, MappingNode> {
  const mapping: Record<string, MappingNode> = {
    [ROOT_ID]: { id: ROOT_ID, parent: null, children: [], message: null },
  }
  for (const row of rows)
    mapping[row.id] = {
      id: row.id,
      parent: row.parentId ?? ROOT_ID,
      children: [],
      message: mappingMessage(row),
    }
  // Children in creation order: a parent is always stored before its children.
  for (const row of rows) mapping[row.parentId ?? ROOT_ID]?.children.push(row.id)
  return mapping
}

const seconds = (date: Date) => date.getTime() / 1000

/**
 * The detail object of a conversation with at least one message; rows in
 * creation order. `configuredModel` names the model when no reply does.
 */
export function conversationObject(
  head: ConversationHead,
  rows: readonly TreeRow[],
  configuredModel: string,
) {
  const branch = branchOf(rows, head.currentNode)
  return {
    id: head.id,
    conversation_id: head.id,
    title: head.title,
    create_time: seconds(head.createdAt),
    update_time: seconds(head.updatedAt),
    current_node: branch.at(-1)?.id ?? null,
    default_model_slug: defaultModelSlug(head.defaultModelSlug, branch, configuredModel),
    is_archived: head.isArchived,
    moderation_results: [] as never[],
    messages: branch.map((row) => ({
      id: row.id,
      role: row.role,
      content: row.content,
      created_at: row.createdAt.toISOString(),
      parent_id: row.parentId,
    })),
    mapping: mappingOf(rows),
  }
}

/** The detail JSON of a conversation with at least one message. */
export function detailBody(
  head: ConversationHead,
  rows: readonly TreeRow[],
  configuredModel: string,
): string {
  return JSON.stringify(conversationObject(head, rows, configuredModel))
}
