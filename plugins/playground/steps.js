// A turn's step messages (CONTRACT §21) as the playground shows them: the
// thoughts of a reasoning model and the tools it called, which come in the
// tree between a user message and the reply (user → thoughts → call → tool
// result → … → reply), in chatgpt.com's shapes. Here they are told apart from
// what the page shows as messages, gathered into the reply they lead to, and
// turned into blocks: one per thoughts message, one per call with its result.
// No DOM here, so it runs under `bun test` as it does in the page.

const roleOf = (message) => message.role ?? message.author?.role ?? 'assistant'

/** A message of a turn that is not its answer: thoughts, a call to a tool, a tool's answer. */
export function isStep(message) {
  const role = roleOf(message)
  if (role === 'tool') return true
  if (role !== 'assistant') return false
  return message.content?.content_type === 'thoughts' || (message.recipient ?? 'all') !== 'all'
}

/** The text a person reads of a thoughts message: its thoughts, one after another. */
const thoughtsText = (message) =>
  (message.content?.thoughts ?? [])
    .map((thought) => (typeof thought?.content === 'string' ? thought.content : ''))
    .join('\n\n')

/** A call's or a tool answer's text: `text` (§21), an export's `result`, or its text parts. */
function contentText(content) {
  if (typeof content?.text === 'string') return content.text
  if (typeof content?.result === 'string') return content.result
  return (content?.parts ?? []).filter((part) => typeof part === 'string').join('')
}

/**
 * @typedef {{ kind: 'thinking', id: string, text: string, done: boolean }} ThinkingBlock
 * @typedef {{ kind: 'tool', id: string, tool: string, args: string,
 *   result: string | undefined, isError: boolean }} ToolBlock
 */

/**
 * The blocks of a turn's step messages, in order: a thinking block per
 * thoughts message, a tool block per call, holding the result of the first
 * call of the same tool still unanswered (parallel calls come first, their
 * answers after, in the same order). An answer without its call gets a block
 * of its own.
 * @param {object[]} steps
 * @returns {(ThinkingBlock | ToolBlock)[]}
 */
export function stepBlocks(steps) {
  const blocks = []
  for (const message of steps) {
    if (roleOf(message) === 'tool') {
      const tool = message.author?.name ?? 'a tool'
      const result = contentText(message.content)
      const isError = message.metadata?.is_error === true
      const call = blocks.find(
        (block) => block.kind === 'tool' && block.tool === tool && block.result === undefined,
      )
      if (call) Object.assign(call, { result, isError })
      else blocks.push({ kind: 'tool', id: message.id, tool, args: '', result, isError })
    } else if (message.content?.content_type === 'thoughts') {
      const done = message.status !== 'in_progress'
      blocks.push({ kind: 'thinking', id: message.id, text: thoughtsText(message), done })
    } else {
      const args = contentText(message.content)
      blocks.push({
        kind: 'tool',
        id: message.id,
        tool: message.recipient,
        args,
        result: undefined,
        isError: false,
      })
    }
  }
  return blocks
}

/**
 * The messages a branch shows, from its path (top first): the user's and the
 * assistant's text messages, each reply with the step messages before it as
 * `steps`, and `turn_head` naming the first of them (the message whose
 * siblings are the reply's other versions). Other messages (system, context,
 * an import's hidden ones) and steps that lead to no reply are left out.
 * @param {object[]} path
 * @param {(message: object) => boolean} isShown
 */
export function shownMessages(path, isShown) {
  const shown = []
  let steps = []
  for (const message of path) {
    if (isStep(message)) {
      steps.push(message)
      continue
    }
    if (!isShown(message)) continue
    if (roleOf(message) === 'assistant' && steps.length > 0)
      shown.push({ ...message, steps, turn_head: steps[0].id })
    else shown.push(message)
    steps = []
  }
  return shown
}
