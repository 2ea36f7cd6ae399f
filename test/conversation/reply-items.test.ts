import { describe, expect, test } from 'bun:test'
import { assistantStartMessage } from '../../src/conversation/messages.ts'
import {
  appendedText,
  completionItem,
  doneItem,
  finishOf,
  frameOf,
  streamCompleteItem,
} from '../../src/conversation/stream/encoding.ts'
import { ReplyItems } from '../../src/conversation/stream/reply-items.ts'
import { prefixFrames } from '../../src/conversation/turn/prefix.ts'
import { chat2apiRead, gpt4freeRead, messagesById } from '../support/client-parsers.ts'

// The §21 stream shapes: a turn that reasons and calls tools, streamed as
// chatgpt.com does, read back by the parsers of deployed clients.

const CID = '6f1c1d3e-6a53-4d53-9a43-2b0f3f9a3e11'
const reply = {
  id: 'reply-1',
  createTime: 1_700_000_000.5,
  modelSlug: 'reasoner',
  parentId: 'user-1',
  messageType: 'next' as const,
}

function turn() {
  let n = 0
  let clock = reply.createTime
  const items = new ReplyItems({
    conversationId: CID,
    reply,
    newId: () => `step-${++n}`,
    // A clock that stands still: times must still grow.
    now: () => clock,
  })
  const frames = prefixFrames({
    conversationId: CID,
    messageId: reply.id,
    createTime: reply.createTime,
    modelSlug: reply.modelSlug,
    parentId: reply.parentId,
    messageType: 'next',
    inputs: [],
    token: 't',
  })
  return { items, frames, tick: () => (clock += 0), n: () => n }
}

const ending = (finish: 'stop' | 'interrupted' | 'error' = 'stop') =>
  [completionItem(finish), streamCompleteItem(CID), doneItem()].map(frameOf)

/** Reasoning, a sentence, two parallel calls (one fails), more reasoning, the answer. */
function toolTurn() {
  const { items, frames } = turn()
  frames.push(...items.reasoning('I should '), ...items.reasoning('search.'))
  frames.push(...items.text('Let me check. '))
  const first = items.toolCall('document_search', '{"query":"redis"}')
  const second = items.toolCall('weather', '{"city":"Paris"}')
  frames.push(...first.frames, ...second.frames)
  frames.push(...items.toolResult('document_search', { text: '{"results":[]}', isError: false }))
  frames.push(...items.toolResult('weather', { text: 'The tool weather failed.', isError: true }))
  frames.push(...items.reasoning('Nothing found.'))
  frames.push(...items.text('Final '), ...items.text('answer.'))
  frames.push(...items.finish(), ...ending())
  return { items, frames }
}

describe('§21 stream shapes', () => {
  test('gpt4free: the text is exactly the reply, the reasoning is the thoughts', () => {
    const { frames } = toolTurn()
    expect(gpt4freeRead(frames)).toEqual({
      text: 'Let me check. Final answer.',
      reasoning: 'I should search.Nothing found.',
    })
  })

  test('chat2api: patches apply to the right documents and give the reply alone', () => {
    const { frames } = toolTurn()
    expect(chat2apiRead(frames)).toBe('Let me check. Final answer.')
  })

  test('the log recovery reads the same text, and the turn ending from the reply completion', () => {
    const { frames } = toolTurn()
    expect(appendedText(frames)).toBe('Let me check. Final answer.')
    expect(finishOf(frames)).toBe('stop')
    // Before the end, the steps' completions say nothing of the turn's ending.
    expect(finishOf(frames.slice(0, -3))).toBeUndefined()
  })

  test('each message has chatgpt.com shape; the tree is user, thoughts, calls, tools, thoughts, reply', () => {
    const { items, frames } = toolTurn()
    const messages = messagesById(frames)
    expect([...messages.keys()]).toEqual([
      'reply-1',
      'step-1',
      'step-2',
      'step-3',
      'step-4',
      'step-5',
      'step-6',
    ])
    expect(messages.get('step-1')).toMatchObject({
      author: { role: 'assistant' },
      content: {
        content_type: 'thoughts',
        thoughts: [{ summary: 'Thinking', content: 'I should search.' }],
      },
      status: 'finished_successfully',
      end_turn: false,
      recipient: 'all',
      metadata: { parent_id: 'user-1' },
    })
    expect(messages.get('step-2')).toMatchObject({
      author: { role: 'assistant' },
      content: { content_type: 'code', language: 'json', text: '{"query":"redis"}' },
      status: 'finished_successfully',
      end_turn: false,
      recipient: 'document_search',
      metadata: { parent_id: 'step-1' },
    })
    expect(messages.get('step-4')).toMatchObject({
      author: { role: 'tool', name: 'document_search' },
      content: { content_type: 'execution_output', text: '{"results":[]}' },
      recipient: 'all',
    })
    expect(messages.get('step-4')?.metadata).not.toHaveProperty('is_error')
    expect(messages.get('step-5')).toMatchObject({
      author: { role: 'tool', name: 'weather' },
      metadata: { is_error: true },
    })
    expect(messages.get('reply-1')).toMatchObject({
      content: { content_type: 'text', parts: ['Final answer.'] },
      status: 'finished_successfully',
      end_turn: true,
      metadata: { parent_id: 'step-6', finish_details: { type: 'stop' } },
    })
    // What is stored: the steps in order, each later than its parent; the reply after the last.
    const steps = items.steps()
    expect(steps.map((step) => [step.id, step.parentId])).toEqual([
      ['step-1', 'user-1'],
      ['step-2', 'step-1'],
      ['step-3', 'step-2'],
      ['step-4', 'step-3'],
      ['step-5', 'step-4'],
      ['step-6', 'step-5'],
    ])
    let previous = reply.createTime
    for (const step of steps) {
      expect(Math.round(step.createTime * 1000)).toBeGreaterThan(Math.round(previous * 1000))
      previous = step.createTime
    }
    expect(items.reply.parentId).toBe('step-6')
    expect(Math.round(items.reply.createTime * 1000)).toBeGreaterThan(Math.round(previous * 1000))
    expect(steps[5]?.content).toEqual({
      content_type: 'thoughts',
      thoughts: [{ summary: 'Thinking', content: 'Nothing found.', chunks: [], finished: true }],
      source_analysis_msg_id: 'step-6',
    })
  })

  test('the add items number each message (c) and the tool answers stream as one add, no appends', () => {
    const { frames } = toolTurn()
    const data = frames.map((frame) => frame.split('data: ')[1]?.trim() ?? '')
    const adds = data.filter((line) => line.includes('"o":"add"')).map((line) => JSON.parse(line))
    // The reply is added again after the first thoughts and after the last step.
    expect(adds.map((add) => add.c)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8])
    const toolIndex = data.findIndex((line) => line.includes('"execution_output"'))
    // Right after a tool's add comes the next message's add: nothing is appended to it.
    expect(data[toolIndex + 1]).toContain('"o":"add"')
  })

  test('reasoning only: thoughts first, then the reply added again; parsers agree', () => {
    const { items, frames } = turn()
    frames.push(...items.reasoning('Hmm.'), ...items.text('Hello'), ...items.finish(), ...ending())
    expect(gpt4freeRead(frames)).toEqual({ text: 'Hello', reasoning: 'Hmm.' })
    expect(chat2apiRead(frames)).toBe('Hello')
    expect(appendedText(frames)).toBe('Hello')
    expect(items.reply.parentId).toBe('step-1')
  })

  test('text only: nothing is added beyond the prefix (the plain §4.2 stream)', () => {
    const { items, frames } = turn()
    const before = frames.length
    frames.push(...items.text('Plain.'), ...items.finish())
    expect(frames.length).toBe(before + 1)
    expect(items.steps()).toEqual([])
    expect(items.reply).toEqual(reply)
  })

  test('stopped while thinking: the thoughts close and the completion is the reply', () => {
    const { items, frames } = turn()
    frames.push(...items.reasoning('Half a th'), ...items.finish(), ...ending('interrupted'))
    expect(chat2apiRead(frames)).toBe('')
    expect(messagesById(frames).get('reply-1')).toMatchObject({
      status: 'finished_successfully',
      metadata: { finish_details: { type: 'interrupted' } },
    })
    expect(messagesById(frames).get('step-1')).toMatchObject({ status: 'finished_successfully' })
    expect(assistantStartMessage(items.reply).metadata.parent_id).toBe('step-1')
  })
})
