// The conversation detail of CONTRACT §4.6 and §10, built from the stored tree
// (pure): `messages` is the current branch, from the top of the tree down to
// the current node, each with its `parent_id`; `mapping` is every message in
// chatgpt.com's shape, under a `client-created-root` node.
import { ROOT_ID, type TextContent } from './messages.ts'
import type { TreeRow } from './tree-repository.ts'

interface MappingNode {
  id: string
  parent: string | null
  children: string[]
  message: {
    id: string
    author: { role: string }
    content: TextContent
    create_time: number
    status: string
    metadata: Record<string, unknown>
  } | null
}

/** Stored metadata clients see; the rest (internal flags, the send's temperature) stays private. */
const PUBLIC_METADATA = ['model_slug', 'parent_id', 'message_type', 'finish_details'] as const

function publicMetadata(metadata: Record<string, unknown>): Record<string, unknown> {
  const shown: Record<string, unknown> = {}
  for (const key of PUBLIC_METADATA) if (metadata[key] !== undefined) shown[key] = metadata[key]
  return shown
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
      message: {
        id: row.id,
        author: { role: row.role },
        content: row.content,
        create_time: row.createdAt.getTime() / 1000,
        status: row.status,
        metadata: publicMetadata(row.metadata),
      },
    }
  // Children in creation order: a parent is always stored before its children.
  for (const row of rows) mapping[row.parentId ?? ROOT_ID]?.children.push(row.id)
  return mapping
}

/** The detail JSON of a conversation with at least one message. */
export function detailBody(
  conversationId: string,
  currentNode: string | null,
  rows: readonly TreeRow[],
): string {
  const branch = branchOf(rows, currentNode)
  return JSON.stringify({
    conversation_id: conversationId,
    current_node: branch.at(-1)?.id ?? null,
    messages: branch.map((row) => ({
      id: row.id,
      role: row.role,
      content: row.content,
      created_at: row.createdAt.toISOString(),
      parent_id: row.parentId,
    })),
    mapping: mappingOf(rows),
  })
}
