// Pure builders of the v1 items of a turn's other messages (CONTRACT §21), in
// chatgpt.com's shapes: a thoughts message (a reasoning model's thinking), an
// assistant message that calls a tool, and the tool's answer. Each message
// enters the stream with an `add` numbered by `c` (the turn's n-th message:
// chat2api keeps one document per `c` and patches the latest), so the reply
// that follows them is added again (reply-items.ts sequences all of it).
//
// What third-party parsers see, by design:
// - thoughts: appends at the top-level path `/message/content/thoughts/0/content`
//   (gpt4free reads exactly that as reasoning); no `parts`, so text parsers skip it;
// - a call and a tool answer: each one `add`, already finished and with
//   `end_turn: false`, never a `parts` append - gpt4free only keeps `parts`
//   appends of `recipient: "all"` messages, and chat2api and aurora skip
//   finished messages that do not end the turn (an in-progress `code`
//   message would be shown by chat2api as a fenced block);
// - their completions carry no `finish_details`: only the reply's does
//   (finishOf in encoding.ts reads the turn's ending from it).
import type { StreamItem } from './encoding.ts'

const delta = (value: unknown): StreamItem => ({ event: 'delta', data: JSON.stringify(value) })

/** What every message of a turn carries. */
export interface StepMessageBase {
  id: string
  /** Unix seconds with a fraction. */
  createTime: number
  modelSlug: string
  /** The message it follows in the tree. */
  parentId: string
}

const assistantAuthor = { role: 'assistant', name: null, metadata: {} }

/** The summary chatgpt.com shows over a thought while it streams. */
export const THOUGHTS_SUMMARY = 'Thinking'

/** A thoughts message as it is added: one thought, its content empty until appended. */
export function thoughtsMessage(base: StepMessageBase) {
  return {
    id: base.id,
    author: assistantAuthor,
    create_time: base.createTime,
    update_time: base.createTime,
    content: {
      content_type: 'thoughts',
      thoughts: [{ summary: THOUGHTS_SUMMARY, content: '', chunks: [], finished: false }],
      source_analysis_msg_id: base.id,
    },
    status: 'in_progress',
    end_turn: null,
    weight: 1,
    metadata: { model_slug: base.modelSlug, parent_id: base.parentId },
    recipient: 'all',
    channel: 'analysis',
  }
}

/** Where a thoughts message's reasoning is appended (gpt4free reads it as reasoning). */
export const THOUGHTS_PATH = '/message/content/thoughts/0/content'

export const thoughtsAppendItem = (chunk: string): StreamItem =>
  delta({ p: THOUGHTS_PATH, o: 'append', v: chunk })

/** The assistant message that calls `tool`, whole: its arguments are known when it is added. */
export function toolCallMessage(base: StepMessageBase, tool: string, args: string) {
  return {
    id: base.id,
    author: assistantAuthor,
    create_time: base.createTime,
    update_time: base.createTime,
    content: { content_type: 'code', language: 'json', text: args },
    status: 'finished_successfully',
    end_turn: false,
    weight: 1,
    metadata: { model_slug: base.modelSlug, parent_id: base.parentId },
    recipient: tool,
    channel: null,
  }
}

/** A tool's answer, whole; `metadata.is_error` when the call failed. */
export function toolResultMessage(
  base: StepMessageBase,
  tool: string,
  result: { text: string; isError: boolean },
) {
  return {
    id: base.id,
    author: { role: 'tool', name: tool, metadata: {} },
    create_time: base.createTime,
    update_time: base.createTime,
    content: { content_type: 'execution_output', text: result.text },
    status: 'finished_successfully',
    end_turn: null,
    weight: 1,
    metadata: {
      model_slug: base.modelSlug,
      parent_id: base.parentId,
      ...(result.isError ? { is_error: true } : {}),
    },
    recipient: 'all',
    channel: null,
  }
}

/** The add of the turn's `c`-th message (the reply's first add is 0). */
export const messageAddItem = (message: unknown, conversationId: string, c: number): StreamItem =>
  delta({ p: '', o: 'add', v: { message, conversation_id: conversationId }, c })

/** A thoughts or call message is done; not the turn (no `finish_details`, `end_turn` false). */
export const stepCompletionItem = (): StreamItem =>
  delta({
    p: '',
    o: 'patch',
    v: [
      { p: '/message/status', o: 'replace', v: 'finished_successfully' },
      { p: '/message/end_turn', o: 'replace', v: false },
      { p: '/message/metadata', o: 'append', v: { is_complete: true } },
    ],
  })
