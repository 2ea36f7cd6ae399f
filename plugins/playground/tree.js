// The playground's view of a conversation's message tree (CONTRACT §10, §17):
// the detail's `mapping` holds every message with its parent and children, so
// the page can show any branch, not only the server's current one. A branch
// is the path from the top to a leaf; at each message with siblings (edits
// of a user message, regenerated replies) the page remembers which sibling
// is shown, and below it follows the newest child. No DOM here, so it runs
// under `bun test` as it does in the page.

export const ROOT = 'client-created-root'

/**
 * @typedef {{ id: string, parent: string | null, children: string[], message: object | null }} Node
 * @typedef {Record<string, Node>} Mapping
 */

/**
 * The messages from the top down to `leaf` (the root node and nodes without
 * a message left out).
 * @param {Mapping} mapping
 * @param {string | undefined} leaf
 * @returns {object[]}
 */
export function pathTo(mapping, leaf) {
  const path = []
  const seen = new Set()
  for (let id = leaf; id && mapping[id] && !seen.has(id); id = mapping[id].parent ?? undefined) {
    seen.add(id)
    const node = mapping[id]
    if (node.message) path.push({ ...node.message, parent_id: parentMessageId(node) })
  }
  return path.reverse()
}

/** A message's parent as the send route names it: null at the top. */
function parentMessageId(node) {
  return node.parent && node.parent !== ROOT ? node.parent : null
}

/**
 * The leaf a branch through `id` ends at: from `id` down, the child chosen
 * there before (`chosen`: parent id → child id), else the newest one
 * (children missing from the mapping left out).
 * @param {Mapping} mapping
 * @param {string} id
 * @param {Map<string, string>} chosen
 */
export function leafUnder(mapping, id, chosen) {
  const seen = new Set([id])
  let current = id
  for (;;) {
    const children = (mapping[current]?.children ?? []).filter((child) => mapping[child])
    if (children.length === 0) return current
    const pick = chosen.get(current)
    const next = pick && children.includes(pick) ? pick : children[children.length - 1]
    // A mapping that loops ends where it would come back.
    if (seen.has(next)) return current
    seen.add(next)
    current = next
  }
}

/**
 * Where a message stands among its siblings: `{index, count, ids}` (index
 * from 0), or undefined when it has none.
 * @param {Mapping} mapping
 * @param {string} id
 */
export function siblingsOf(mapping, id) {
  const parent = mapping[id]?.parent
  const ids = (parent ? mapping[parent]?.children : undefined) ?? []
  if (ids.length < 2) return undefined
  return { index: ids.indexOf(id), count: ids.length, ids }
}

/**
 * Remembers the branch ending at `leaf` as the one shown, so that moving
 * away and back returns to it.
 * @param {Mapping} mapping
 * @param {string} leaf
 * @param {Map<string, string>} chosen
 */
export function choosePath(mapping, leaf, chosen) {
  const seen = new Set()
  for (let id = leaf; id && mapping[id] && !seen.has(id); id = mapping[id].parent ?? undefined) {
    seen.add(id)
    const parent = mapping[id].parent
    if (parent) chosen.set(parent, id)
  }
}

/**
 * The leaf to show after moving from message `id` to its sibling `step`
 * places away (-1: the previous one, 1: the next), or undefined at either end.
 * @param {Mapping} mapping
 * @param {string} id
 * @param {number} step
 * @param {Map<string, string>} chosen
 */
export function switchSibling(mapping, id, step, chosen) {
  const siblings = siblingsOf(mapping, id)
  const target = siblings?.ids[siblings.index + step]
  if (!target) return undefined
  const leaf = leafUnder(mapping, target, chosen)
  choosePath(mapping, leaf, chosen)
  return leaf
}
