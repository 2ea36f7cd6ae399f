// A reply's steps in the playground (CONTRACT §21), the code the page runs:
// the stream reader (stream.js) over a turn that thinks, calls two tools and
// answers, made by the service's own builders (its text is the reply's
// `parts` appends alone, its steps kept apart); the blocks a turn's steps
// make (steps.js: a call and its result as one, a failed one marked); and a
// branch's shown messages, each reply with the steps before it.
import { describe, expect, test } from 'bun:test'
import { isStep, shownMessages, stepBlocks } from '../../plugins/playground/steps.js'
import { applyEvent, newTurn, sseEvents } from '../../plugins/playground/stream.js'
import { pathTo } from '../../plugins/playground/tree.js'
import { TOOL_TURN, toolTurnDetail, toolTurnFrames } from '../support/tool-turn.ts'

const t = TOOL_TURN
const ids = (list: object[]) => list.map((message) => (message as { id: string }).id)
/** The blocks, loosely typed for comparing with plain objects. */
const blocks = (steps: object[]): unknown[] => stepBlocks(steps)

async function streamed(frames: string[]) {
  const body = new Response(frames.join('')).body as ReadableStream<Uint8Array>
  const turn = newTurn()
  const texts: string[] = []
  for await (const event of sseEvents(body)) {
    applyEvent(turn, event)
    texts.push(turn.text)
  }
  return { turn, texts }
}

const expectedBlocks = [
  { kind: 'thinking', id: 'step-msg-1', text: t.thinking.join(''), done: true },
  {
    kind: 'tool',
    id: 'step-msg-2',
    tool: t.search.tool,
    args: t.search.args,
    result: t.searchResult,
    isError: false,
  },
  {
    kind: 'tool',
    id: 'step-msg-3',
    tool: t.weather.tool,
    args: t.weather.args,
    result: t.weatherError,
    isError: true,
  },
  { kind: 'thinking', id: 'step-msg-6', text: t.thinkingAgain, done: true },
]

describe('the stream reader over a turn with steps', () => {
  test('the text is the answer alone; the steps are kept apart, finished', async () => {
    const { turn, texts } = await streamed(toolTurnFrames())
    expect(turn.text).toBe(t.answer.join(''))
    // No step's text was ever shown as the answer.
    for (const text of texts) expect(t.answer.join('')).toStartWith(text)
    expect(turn).toMatchObject({
      messageId: t.replyId,
      status: 'finished_successfully',
      finish: 'stop',
      done: true,
      current: undefined,
    })
    expect(ids(turn.steps)).toEqual([
      'step-msg-1',
      'step-msg-2',
      'step-msg-3',
      'step-msg-4',
      'step-msg-5',
      'step-msg-6',
    ])
    expect(blocks(turn.steps)).toEqual(expectedBlocks)
  })

  test('mid-thought: the thoughts are open and growing, the reply still streaming', async () => {
    const frames = toolTurnFrames()
    // Up to the first thought's first append.
    const at = frames.findIndex((frame) => frame.includes('/thoughts/0/content'))
    const { turn } = await streamed(frames.slice(0, at + 1))
    expect(turn.status).toBe('in_progress')
    expect(turn.text).toBe('')
    expect(blocks(turn.steps)).toEqual([
      { kind: 'thinking', id: 'step-msg-1', text: t.thinking[0], done: false },
    ])
  })

  test('text before a call stays when the reply is added again after it', async () => {
    const frames = toolTurnFrames()
    const replyAgain = frames.findIndex(
      (frame) =>
        frame.includes('"o":"add"') &&
        frame.includes(`"id":"${t.replyId}"`) &&
        frame.includes('"c":7'),
    )
    expect(replyAgain).toBeGreaterThan(0)
    // A sentence streamed to the reply before the first thoughts.
    const early = frames.findIndex(
      (frame) => frame.includes('"o":"add"') && frame.includes('"c":1'),
    )
    const withEarlyText = [
      ...frames.slice(0, early),
      `event: delta\ndata: ${JSON.stringify({ p: '/message/content/parts/0', o: 'append', v: 'Let me look. ' })}\n\n`,
      ...frames.slice(early),
    ]
    const { turn } = await streamed(withEarlyText)
    expect(turn.text).toBe(`Let me look. ${t.answer.join('')}`)
  })
})

describe('steps in a branch', () => {
  test('a turn read from the mapping: the reply carries its steps and its turn head', () => {
    const detail = toolTurnDetail(toolTurnFrames())
    const path = pathTo(detail.mapping, detail.current_node)
    expect(ids(path)).toEqual([
      t.userId,
      'step-msg-1',
      'step-msg-2',
      'step-msg-3',
      'step-msg-4',
      'step-msg-5',
      'step-msg-6',
      t.replyId,
    ])
    const shown = shownMessages(path, () => true)
    expect(ids(shown)).toEqual([t.userId, t.replyId])
    const reply = shown[1] as { turn_head: string; steps: object[] }
    expect(reply.turn_head).toBe('step-msg-1')
    expect(blocks(reply.steps)).toEqual(expectedBlocks)
  })

  test('which messages are steps; steps that lead to no reply are left out', () => {
    const message = (role: string, content: object, recipient = 'all') => ({
      id: `${role}-${recipient}`,
      author: { role, name: 'x' },
      content,
      recipient,
    })
    const text = { content_type: 'text', parts: ['hi'] }
    expect(isStep(message('assistant', { content_type: 'thoughts', thoughts: [] }))).toBe(true)
    expect(isStep(message('assistant', { content_type: 'code', text: '{}' }, 'browser'))).toBe(true)
    expect(isStep(message('tool', { content_type: 'execution_output', text: '' }))).toBe(true)
    expect(isStep(message('assistant', text))).toBe(false)
    expect(isStep(message('user', text))).toBe(false)
    const call = {
      ...message('assistant', { content_type: 'code', text: '{}' }, 'browser'),
      id: 'c',
    }
    const user = { ...message('user', text), id: 'u' }
    expect(shownMessages([user, call], () => true)).toEqual([user])
    // An answer whose call is not on the branch still shows, as its own block.
    const lone = { ...message('tool', { content_type: 'execution_output', text: 'r' }), id: 'r' }
    expect(blocks([lone])).toEqual([
      { kind: 'tool', id: 'r', tool: 'x', args: '', result: 'r', isError: false },
    ])
  })
})
