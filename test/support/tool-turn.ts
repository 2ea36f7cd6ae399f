// A turn that reasons and calls tools (CONTRACT §21) as the service streams
// it and as its detail's `mapping` then holds it, made with the service's own
// builders (prefixFrames, ReplyItems): for the playground's tests, which feed
// it to the page's stream reader and to the page itself. The turn thinks
// (Markdown, and markup that must not run), calls two tools in parallel (one
// fails), thinks again and answers; a tool's answer holds hostile markup.
import {
  appendedText,
  completionItem,
  doneItem,
  frameOf,
  streamCompleteItem,
} from '../../src/conversation/stream/encoding.ts'
import { ReplyItems } from '../../src/conversation/stream/reply-items.ts'
import { prefixFrames } from '../../src/conversation/turn/prefix.ts'
import { messagesById } from './client-parsers.ts'

export const TOOL_TURN = {
  conversationId: '6f1c1d3e-6a53-4d53-9a43-2b0f3f9a3e21',
  userId: 'user-msg-1',
  replyId: 'reply-msg-1',
  question: 'What do my notes say about Redis?',
  thinking: ['I should **search** the notes ', 'first. <img src=x onerror="window.__pwned = 5">'],
  search: { tool: 'document_search', args: '{"query":"redis"}' },
  /** A tool's answer that would run script if the page trusted it. */
  searchResult:
    'Found: <img src=x onerror="window.__pwned = 6"><script>window.__pwned = 7</script>',
  weather: { tool: 'weather', args: '{"city":"Paris"}' },
  weatherError: 'The tool weather failed: timed out.',
  thinkingAgain: 'The notes are enough.',
  answer: ['Your notes say Redis ', 'keeps the streams.'],
}

/** The turn's SSE frames, from the first (delta_encoding) to [DONE]. */
export function toolTurnFrames(): string[] {
  const t = TOOL_TURN
  const createTime = 1_700_000_000.5
  let n = 0
  const reply = {
    id: t.replyId,
    createTime,
    modelSlug: 'reasoner',
    parentId: t.userId,
    messageType: 'next' as const,
  }
  const items = new ReplyItems({
    conversationId: t.conversationId,
    reply,
    newId: () => `step-msg-${++n}`,
    now: () => createTime,
  })
  const frames = prefixFrames({
    conversationId: t.conversationId,
    messageId: t.replyId,
    createTime,
    modelSlug: 'reasoner',
    parentId: t.userId,
    messageType: 'next',
    inputs: [
      {
        id: t.userId,
        role: 'user',
        content: { content_type: 'text', parts: [t.question] },
        createTime: createTime - 1,
        parentId: null,
      },
    ],
    token: 'a.b.c',
  })
  for (const chunk of t.thinking) frames.push(...items.reasoning(chunk))
  frames.push(...items.toolCall(t.search.tool, t.search.args).frames)
  frames.push(...items.toolCall(t.weather.tool, t.weather.args).frames)
  frames.push(...items.toolResult(t.search.tool, { text: t.searchResult, isError: false }))
  frames.push(...items.toolResult(t.weather.tool, { text: t.weatherError, isError: true }))
  frames.push(...items.reasoning(t.thinkingAgain))
  for (const chunk of t.answer) frames.push(...items.text(chunk))
  frames.push(...items.finish())
  frames.push(
    ...[completionItem('stop'), streamCompleteItem(t.conversationId), doneItem()].map(frameOf),
  )
  return frames
}

interface MappingNode {
  id: string
  parent: string | null
  children: string[]
  message: Record<string, unknown> | null
}

/**
 * The conversation detail after the turn: the user message, the steps and
 * the reply (with the whole text its appends made) in one chain, as §21's
 * mapping holds them, each message as its stream left it.
 */
export function toolTurnDetail(frames: string[]) {
  const t = TOOL_TURN
  const root = 'client-created-root'
  const mapping: Record<string, MappingNode> = {
    [root]: { id: root, parent: null, children: [], message: null },
    [t.userId]: {
      id: t.userId,
      parent: root,
      children: [],
      message: {
        id: t.userId,
        author: { role: 'user', name: null, metadata: {} },
        content: { content_type: 'text', parts: [t.question] },
        status: 'finished_successfully',
        recipient: 'all',
        metadata: {},
      },
    },
  }
  for (const message of messagesById(frames).values()) {
    const id = String(message.id)
    const metadata = message.metadata as { parent_id: string }
    if (id === t.replyId) (message.content as { parts: string[] }).parts = [appendedText(frames)]
    mapping[id] = { id, parent: metadata.parent_id, children: [], message }
  }
  for (const node of Object.values(mapping))
    if (node.parent && node.id !== root) mapping[node.parent]?.children.push(node.id)
  return {
    conversation_id: t.conversationId,
    title: 'Notes about Redis',
    current_node: t.replyId,
    mapping,
  }
}
