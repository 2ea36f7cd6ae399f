// The playground's reader of a reply stream (CONTRACT §4.2 "delta_encoding
// v1"), in plain browser JavaScript: Server-Sent Events parsed from a fetch
// body (EventSource cannot POST), and each item applied to the state of the
// turn it belongs to. No DOM here, so it runs under `bun test` as it does in
// the page. A turn that reasons or calls tools (CONTRACT §21) adds other
// messages after the reply's first add (thoughts, a call, a tool's answer),
// each kept in `steps` as its add gave it (thoughts appends applied), then
// adds the reply again: only the reply's `parts` appends are its text.
import { isStep } from './steps.js'

/**
 * The events of an SSE body as they arrive: `{event, data}` per block of
 * lines, comments (`: ping`) skipped, however the bytes are split.
 * @param {ReadableStream<Uint8Array>} body
 */
export async function* sseEvents(body) {
  const reader = body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  try {
    for (;;) {
      const { value, done } = await reader.read()
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true })
      // CRLF and CR end lines too; a CR at the end may be the first half of a CRLF.
      const pending = !done && buffer.endsWith('\r') ? '\r' : ''
      buffer = buffer.slice(0, buffer.length - pending.length).replace(/\r\n?/g, '\n') + pending
      for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
        const event = parseBlock(buffer.slice(0, end))
        buffer = buffer.slice(end + 2)
        if (event) yield event
      }
      if (done) {
        const last = parseBlock(buffer)
        if (last) yield last
        return
      }
    }
  } finally {
    reader.releaseLock()
  }
}

/** One block of `field: value` lines; undefined when it carries no data. */
function parseBlock(block) {
  let event = 'message'
  const data = []
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'event') event = value
    else if (field === 'data') data.push(value)
  }
  return data.length === 0 ? undefined : { event, data: data.join('\n') }
}

/**
 * The state of one turn as its stream tells it.
 * @typedef {object} Turn
 * @property {string | undefined} conversationId
 * @property {string | undefined} messageId the reply's id, from its `add` item
 * @property {string | undefined} modelSlug the model writing the reply, from its `add` item
 * @property {string | undefined} token the stream's resume token
 * @property {{ id: string }[]} inputs input messages echoed by the stream, in order
 * @property {string} text
 * @property {object[]} steps the turn's thoughts, calls and tool answers, as added (CONTRACT §21)
 * @property {object | undefined} current the step the stream writes to now, undefined for the reply
 * @property {string | undefined} status
 * @property {string | undefined} finish `stop`, `interrupted` or `error` once the completion patch came
 * @property {string | undefined} error
 * @property {string | undefined} title
 * @property {boolean} done
 * @property {{ p: string, o: string } | undefined} last the last operation, for v1's short form `{"v": …}`
 */

/** @returns {Turn} */
export function newTurn() {
  return {
    conversationId: undefined,
    messageId: undefined,
    modelSlug: undefined,
    token: undefined,
    inputs: [],
    text: '',
    steps: [],
    current: undefined,
    status: undefined,
    finish: undefined,
    error: undefined,
    title: undefined,
    done: false,
    last: undefined,
  }
}

/**
 * Applies one SSE event to the turn; returns whether anything a person sees changed.
 * @param {Turn} turn
 * @param {{ event: string, data: string }} sse
 * @returns {boolean}
 */
export function applyEvent(turn, { event, data }) {
  if (event === 'delta_encoding') return false
  if (data === '[DONE]') {
    turn.done = true
    return true
  }
  let item
  try {
    item = JSON.parse(data)
  } catch {
    return false
  }
  if (event === 'delta') return applyDelta(turn, item)
  switch (item?.type) {
    case 'resume_conversation_token':
      turn.token = item.token
      turn.conversationId = item.conversation_id
      return false
    case 'input_message':
      turn.inputs.push(item.input_message)
      turn.conversationId ??= item.conversation_id
      return true
    case 'error':
      turn.error = item.error ?? item.detail ?? 'The reply failed.'
      return true
    case 'title_generation':
      turn.title = item.title
      return true
    default:
      return false
  }
}

function applyDelta(turn, item) {
  if (item.o === 'add' && item.p === '') return applyAdd(turn, item.v)
  if (item.o === 'patch' && Array.isArray(item.v))
    return item.v.map((op) => applyOperation(turn, op)).some(Boolean)
  if (typeof item.p === 'string' && typeof item.o === 'string') return applyOperation(turn, item)
  // The short form continues the last operation with a new value.
  if (turn.last && 'v' in item) return applyOperation(turn, { ...turn.last, v: item.v })
  return false
}

/** A message added: a step of the turn, or the reply (again: its text so far stays). */
function applyAdd(turn, value) {
  const message = value?.message
  turn.conversationId ??= value?.conversation_id
  if (message && isStep(message)) {
    const step = structuredClone(message)
    turn.steps.push(step)
    turn.current = step
    return true
  }
  const again = message?.id !== undefined && message.id === turn.messageId
  turn.current = undefined
  turn.messageId = message?.id
  turn.modelSlug = message?.metadata?.model_slug
  if (!again) turn.text = message?.content?.parts?.[0] ?? ''
  turn.status = message?.status
  return true
}

const THOUGHTS = /^\/message\/content\/thoughts\/(\d+)\/content$/

function applyOperation(turn, op) {
  turn.last = { p: op.p, o: op.o }
  if (turn.current) return applyStepOperation(turn.current, op)
  if (op.p === '/message/content/parts/0' && op.o === 'append' && typeof op.v === 'string') {
    turn.text += op.v
    return true
  }
  if (op.p === '/message/status' && op.o === 'replace') {
    turn.status = op.v
    return true
  }
  if (op.p === '/message/metadata' && op.o === 'append' && op.v?.finish_details) {
    turn.finish = op.v.finish_details.type
    return true
  }
  return false
}

/** A thoughts append or a step's completion: what the step shows; never the turn's end. */
function applyStepOperation(step, op) {
  const thought = THOUGHTS.exec(op.p)
  if (thought && op.o === 'append' && typeof op.v === 'string') {
    const entry = step.content?.thoughts?.[Number(thought[1])]
    if (!entry) return false
    entry.content = (entry.content ?? '') + op.v
    return true
  }
  if (op.p === '/message/status' && op.o === 'replace') {
    step.status = op.v
    return true
  }
  return false
}
