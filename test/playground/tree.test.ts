// The playground's branch logic (plugins/playground/tree.js) on a mapping of
// the detail's shape: the branch to a leaf, siblings, moving between them
// (and back to where one was), and mappings that are cut or loop.
import { describe, expect, test } from 'bun:test'
import {
  choosePath,
  leafUnder,
  pathTo,
  ROOT,
  siblingsOf,
  switchSibling,
} from '../../plugins/playground/tree.js'

type Node = { id: string; parent: string | null; children: string[]; message: object | null }

/** A mapping from `parent → children` lists, each message `{id}` (the root has none). */
function mappingOf(tree: Record<string, string[]>): Record<string, Node> {
  const mapping: Record<string, Node> = {
    [ROOT]: { id: ROOT, parent: null, children: [], message: null },
  }
  for (const [parent, children] of Object.entries(tree))
    for (const id of children) {
      mapping[id] = { id, parent, children: [], message: { id } }
      mapping[parent]?.children.push(id)
    }
  return mapping
}

// u1 was edited into u2; u1 was answered twice (a1, then a1b by a regenerate); u2 once.
const mapping = mappingOf({ [ROOT]: ['u1', 'u2'], u1: ['a1', 'a1b'], u2: ['a2'], a1: ['u3'] })
const ids = (path: object[]) => path.map((message) => (message as { id: string }).id)

describe('the playground branch tree', () => {
  test('the branch to a leaf, top first, each message with its parent as a send names it', () => {
    expect(ids(pathTo(mapping, 'u3'))).toEqual(['u1', 'a1', 'u3'])
    expect(pathTo(mapping, 'a1')).toEqual([
      { id: 'u1', parent_id: null },
      { id: 'a1', parent_id: 'u1' },
    ])
    expect(pathTo(mapping, 'nowhere')).toEqual([])
  })

  test('siblings: where a message stands, none for an only child', () => {
    expect(siblingsOf(mapping, 'a1b')).toEqual({ index: 1, count: 2, ids: ['a1', 'a1b'] })
    expect(siblingsOf(mapping, 'u1')).toMatchObject({ index: 0, count: 2 })
    expect(siblingsOf(mapping, 'a2')).toBeUndefined()
    expect(siblingsOf(mapping, 'nowhere')).toBeUndefined()
  })

  test('moving between siblings follows the newest child, then comes back to the branch left', () => {
    const chosen = new Map<string, string>()
    choosePath(mapping, 'a1b', chosen)
    // From a1b back to a1: a1's branch goes on to u3.
    expect(switchSibling(mapping, 'a1b', -1, chosen)).toBe('u3')
    expect(switchSibling(mapping, 'a1', -1, chosen)).toBeUndefined()
    // To the edited question and back: the branch under u1 is still the one through a1.
    expect(switchSibling(mapping, 'u1', 1, chosen)).toBe('a2')
    expect(switchSibling(mapping, 'u2', 1, chosen)).toBeUndefined()
    expect(switchSibling(mapping, 'u2', -1, chosen)).toBe('u3')
    // Without a choice, the newest child.
    expect(leafUnder(mapping, 'u1', new Map())).toBe('a1b')
  })

  test('a mapping that loops or names missing nodes ends instead of hanging', () => {
    const looped = mappingOf({ [ROOT]: ['x'], x: ['y'] })
    looped.x = { ...(looped.x as Node), parent: 'y' }
    looped.y = { ...(looped.y as Node), children: ['x'] }
    expect(ids(pathTo(looped, 'y'))).toEqual(['x', 'y'])
    expect(leafUnder(looped, 'x', new Map())).toBe('y')
    const cut = mappingOf({ [ROOT]: ['x'] })
    ;(cut.x as Node).children.push('gone')
    expect(leafUnder(cut, 'x', new Map())).toBe('x')
    expect(ids(pathTo(cut, 'gone'))).toEqual([])
  })
})
