// A chatgpt.com-shaped conversations.json of a chosen size, for the import
// benchmark (import-memory.ts): many small conversations, as a real history
// is, each a root and a few turns in a line, with chatgpt.com's fields.

/** One conversation as chatgpt.com exports it: a root, a few turns, one branch. */
function conversation(index: number): Record<string, unknown> {
  const id = `bench-${index.toString(16).padStart(8, '0')}-${crypto.randomUUID()}`
  const turns = 1 + (index % 3)
  const mapping: Record<string, unknown> = {
    root: { id: 'root', message: null, parent: null, children: [] },
  }
  let parent = 'root'
  for (let turn = 0; turn < turns * 2; turn++) {
    const nodeId = `${id}-m${turn}`
    const role = turn % 2 === 0 ? 'user' : 'assistant'
    mapping[nodeId] = {
      id: nodeId,
      parent,
      children: [],
      message: {
        id: nodeId,
        author: { role, name: null, metadata: {} },
        create_time: 1_700_000_000 + index + turn,
        update_time: null,
        content: {
          content_type: 'text',
          parts: [`${role} ${turn} of ${index}: ${'a few words '.repeat(1 + (index % 4))}`],
        },
        status: 'finished_successfully',
        end_turn: role === 'assistant' ? true : null,
        weight: 1,
        metadata: {},
        recipient: 'all',
        channel: null,
      },
    }
    ;(mapping[parent] as { children: string[] }).children.push(nodeId)
    parent = nodeId
  }
  return {
    id,
    conversation_id: id,
    title: `Benchmark conversation ${index}`,
    create_time: 1_700_000_000 + index,
    update_time: 1_700_000_000 + index + turns * 2,
    mapping,
    current_node: parent,
    default_model_slug: 'gpt-4o',
    is_archived: false,
  }
}

/** conversations.json just under `limit` bytes (and the count in it). */
export function generateExport(limit: number): { file: Uint8Array; count: number } {
  const parts: string[] = []
  let size = 2
  for (let index = 0; ; index++) {
    const text = JSON.stringify(conversation(index))
    if (size + text.length + 1 > limit) break
    parts.push(text)
    size += text.length + 1
  }
  return { file: new TextEncoder().encode(`[${parts.join(',')}]`), count: parts.length }
}
