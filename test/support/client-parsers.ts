// What three deployed clients of chatgpt.com's stream make of one, re-told in
// TypeScript from their sources (public repositories, read for these rules):
// - gpt4free, g4f/Provider/needs_auth/OpenaiChat.py `iter_messages_line`:
//   a `title_generation` item anywhere is the title; a sticky top-level `p`;
//   `/message/content/thoughts…/content` appends are reasoning; string `v`s
//   and `/message/content/parts/0` appends count as text only while the last
//   added message's `recipient` is `all`; a patch of `/message/metadata` with
//   finish_details (the completion patch) ends the reading: nothing after it
//   is read;
// - chat2api (lanqian528/chat2api), chatgpt/stream_v1.py: one document per
//   `add`'s `c`, every patch applied (as JSON pointers) to the latest; then
//   chatgpt/chatFormat.py `stream_response` on each document: an in-progress
//   `text` message yields what its part grew by, other in-progress content
//   its `text` (a `code` one in a fence), a finished message that does not
//   end the turn resets, one that does ends the reply;
// - a reducer by message id (a web clone keeping each message's state).
// Every frame is `event: …\ndata: …\n\n` or `data: …\n\n`.

type Json = Record<string, unknown>

/** The JSON data of each frame ([DONE] and non-JSON as undefined), with whether it had an event line. */
function items(frames: readonly string[]): { data: unknown; event: boolean }[] {
  return frames.map((frame) => {
    const event = frame.startsWith('event: ')
    const line = frame.split('\n').find((l) => l.startsWith('data: ')) ?? ''
    const text = line.slice('data: '.length)
    if (text === '[DONE]') return { data: '[DONE]', event }
    try {
      return { data: JSON.parse(text), event }
    } catch {
      return { data: undefined, event }
    }
  })
}

export function gpt4freeRead(frames: readonly string[]): {
  text: string
  reasoning: string
  title?: string
} {
  let p: string | undefined
  let recipient: string | undefined
  let text = ''
  let reasoning = ''
  let title: string | undefined
  let finished = false
  for (const { data } of items(frames)) {
    if (finished) break
    if (typeof data !== 'object' || data === null) continue
    const line = data as Json
    if (line.type === 'title_generation' && typeof line.title === 'string') title = line.title
    p = typeof line.p === 'string' ? line.p : p
    if (p?.startsWith('/message/content/thoughts')) {
      if (p.endsWith('/content') && typeof line.v === 'string') reasoning += line.v
      continue
    }
    if (!('v' in line)) continue
    const v = line.v
    if (typeof v === 'string' && recipient === 'all') {
      if (!('p' in line) || line.p === '/message/content/parts/0') text += v
    } else if (Array.isArray(v)) {
      for (const op of v as Json[]) {
        if (op.p === '/message/content/parts/0' && recipient === 'all') text += String(op.v)
        if (op.p === '/message/metadata' && recipient === 'all') {
          // Its finish_details' type is gpt4free's finish_reason: set, it reads no further.
          const details = (op.v as Json | undefined)?.finish_details as Json | undefined
          finished = typeof details?.type === 'string'
          break
        }
      }
    } else if (typeof v === 'object' && v !== null) {
      const message = (v as Json).message as Json | undefined
      if (message && typeof message.recipient === 'string') recipient = message.recipient
    }
  }
  return title === undefined ? { text, reasoning } : { text, reasoning, title }
}

function pointer(doc: Json, path: string): { parent: Json | unknown[]; key: string } {
  const keys = path.split('/').slice(1)
  let node: unknown = doc
  for (const key of keys.slice(0, -1)) {
    if (typeof node !== 'object' || node === null || !(key in node))
      throw new Error(`no ${path} in the document`)
    node = (node as Json)[key]
  }
  if (typeof node !== 'object' || node === null) throw new Error(`no ${path} in the document`)
  return { parent: node as Json, key: keys.at(-1) ?? '' }
}

/**
 * Applies one v1 operation. chat2api replaces an object it is told to append
 * to; chatgpt.com's own client (and `merge`) merges into it.
 */
function applyPatch(doc: Json, p: string, o: string, v: unknown, merge = false): void {
  if (o === 'patch') {
    for (const op of v as Json[]) applyPatch(doc, String(op.p), String(op.o), op.v, merge)
    return
  }
  const { parent, key } = pointer(doc, p)
  const target = parent as Json
  if (!(key in target) && o === 'append') throw new Error(`no ${p} in the document`)
  if (o === 'append') {
    const current = target[key]
    if (Array.isArray(current)) target[key] = current.concat(v)
    else if (typeof current === 'string') target[key] = current + String(v)
    else if (merge && typeof current === 'object' && current !== null)
      target[key] = { ...(current as Json), ...(v as Json) }
    else target[key] = v
  } else target[key] = v
}

/** chat2api's text; throws where its patching would fail (a path the document does not have). */
export function chat2apiRead(frames: readonly string[]): string {
  const documents = new Map<number, Json>()
  let c: number | undefined
  let p: string | undefined
  let o: string | undefined
  const snapshots: Json[] = []
  let nextIsDelta = false
  for (const { data, event } of items(frames)) {
    if (event) nextIsDelta = true
    if (!nextIsDelta || typeof data !== 'object' || data === null) continue
    const line = data as Json
    if ('c' in line) {
      c = Number(line.c)
      if (typeof line.v === 'object' && line.v !== null) {
        documents.set(c, structuredClone(line.v as Json))
        snapshots.push(structuredClone(documents.get(c) as Json))
      }
      continue
    }
    if (!('v' in line)) continue
    if (typeof line.p === 'string') p = line.p
    if (typeof line.o === 'string') o = line.o
    const doc = c === undefined ? undefined : documents.get(c)
    if (doc && p !== undefined && o !== undefined) applyPatch(doc, p, o, line.v)
    if (doc) snapshots.push(structuredClone(doc))
  }
  // stream_response over the documents
  let text = ''
  let lenLast = 0
  let lastType: string | undefined
  let messageId: string | undefined
  for (const snapshot of snapshots) {
    const message = (snapshot.message ?? {}) as Json
    const author = (message.author ?? {}) as Json
    if (author.role === 'user') continue
    const content = (message.content ?? {}) as Json
    const recipient = String(message.recipient ?? '')
    if (message.status === 'in_progress') {
      const type = String(content.content_type)
      let added: string
      if (type === 'text') {
        const part = String((content.parts as string[])[0] ?? '')
        if (part === '') {
          messageId = String(message.id)
          added = ''
        } else {
          if (messageId && messageId !== message.id) continue
          added = part.slice(lenLast)
          lenLast = part.length
        }
      } else {
        const body = String(content.text ?? '')
        if (type === 'code' && lastType !== 'code')
          added = `\n\`\`\`${recipient}\n${body.slice(lenLast)}`
        else if (type === 'execution_output' && lastType !== 'execution_output')
          added = `\n\`\`\`Output\n${body.slice(lenLast)}`
        else added = body.slice(lenLast)
        lenLast = body.length
      }
      if ((lastType === 'code' || lastType === 'execution_output') && type !== lastType)
        added = `\n\`\`\`\n${added}`
      text += added
      lastType = type
    } else if (
      message.status === 'finished_successfully' ||
      message.status === 'finished_partial_completion'
    ) {
      const metadata = (message.metadata ?? {}) as Json
      if (!message.end_turn || !metadata.finish_details) {
        messageId = undefined
        lenLast = 0
        continue
      }
      const part = String(((content.parts as string[]) ?? [''])[0] ?? '')
      text += part.slice(lenLast)
      break
    }
  }
  return text
}

/** Each message's last state by id, in the order first added. */
export function messagesById(frames: readonly string[]): Map<string, Json> {
  const byId = new Map<string, Json>()
  let current: Json | undefined
  for (const { data } of items(frames)) {
    if (typeof data !== 'object' || data === null) continue
    const line = data as Json
    if (line.o === 'add' && typeof line.v === 'object' && line.v !== null) {
      const message = structuredClone((line.v as Json).message as Json)
      byId.set(String(message.id), message)
      current = { message }
      continue
    }
    if (current && typeof line.p === 'string' && typeof line.o === 'string' && 'v' in line)
      applyPatch(current, line.p, line.o, line.v, true)
  }
  return byId
}
