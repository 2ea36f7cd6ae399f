// An OpenAI-compatible chat-completions server for tests, run as a real
// process on loopback (test/support/fake-openai.ts starts it). FAKE_MODE picks
// how it answers:
// - `slow`: streams `Reply of <model> to "<last user text>" (<n> messages).`
//   word by word, FAKE_CHUNK_DELAY_MS apart (or <N> ms for a model named
//   `…-<N>ms`); a non-streamed request (a title) gets a short title; a model
//   named `hostile…` streams HOSTILE_PIECES (a NUL, lone surrogates, an emoji
//   cut between two chunks) and titles with a NUL; a model whose name holds
//   `reason` first streams reasoning (`reasoning_content`, or `reasoning` for
//   `…reason-ollama…`); one whose name holds `tools` calls every offered tool
//   (at most two, in parallel, each call's id, name and arguments split across
//   interleaved chunks, arguments `{"query":"<last user text>","text":…}`,
//   or invalid JSON for `…badjson…`; the tools named `call:<name>` in the
//   user's text instead, offered or not) until the request holds tool
//   results (a `…loop…` model calls again whenever it is offered tools),
//   then answers `Tool results: <each result, joined by " | ">`;
// - `failing`: every request is a 500 whose message echoes the bearer key it
//   was sent (as some servers do), so tests see that the key never reaches a
//   client.
// Every request is recorded (body and authorization header) and listed by
// GET /requests, so tests can see exactly what the service sent. It prints
// `listening <port>` once it listens on a port of its own choosing.
const mode = process.env.FAKE_MODE ?? 'slow'
const chunkDelayMs = Number(process.env.FAKE_CHUNK_DELAY_MS ?? '20')
const encoder = new TextEncoder()

interface Recorded {
  body: Record<string, unknown>
  authorization: string | null
}
const recorded: Recorded[] = []

const chunk = (content: string, finish: string | null = null) =>
  `data: ${JSON.stringify({
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { content }, finish_reason: finish }],
  })}\n\n`

/** A message's text: its content, or the text parts of content sent as parts (attachments). */
function textOfContent(content: unknown): string {
  if (typeof content === 'string') return content
  if (!Array.isArray(content)) return ''
  return content
    .filter((part) => part?.type === 'text' && typeof part.text === 'string')
    .map((part) => part.text as string)
    .join('\n')
}

function replyText(body: Record<string, unknown>): string {
  const messages = Array.isArray(body.messages)
    ? (body.messages as { role?: string; content?: unknown }[])
    : []
  const last = textOfContent(messages.filter((message) => message.role === 'user').at(-1)?.content)
  const words = last.split(/\s+/).filter(Boolean).slice(0, 6).join(' ')
  return `Reply of ${String(body.model)} to "${words}" (${messages.length} messages).`
}

/** What a `hostile…` model streams: text no database column holds as it is. */
const HOSTILE_PIECES = ['NUL:\u0000 ', 'lone:\ud800 ', 'low:\udc00 ', 'party:\ud83c', '\udf89 end.']

/** A chunk with any delta (reasoning, tool call pieces). */
const deltaChunk = (delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, finish_reason: finish }],
  })}\n\n`

type Message = { role?: string; content?: string | null; tool_calls?: unknown[] }

/** What a scripted (`reason`, `tools`) model streams for a request, as raw chunks. */
function scripted(body: Record<string, unknown>): string[] | undefined {
  const model = String(body.model)
  if (!model.includes('reason') && !model.includes('tools')) return undefined
  const messages = (Array.isArray(body.messages) ? body.messages : []) as Message[]
  const chunks: string[] = []
  if (model.includes('reason')) {
    const field = model.includes('reason-ollama') ? 'reasoning' : 'reasoning_content'
    for (const piece of ['Thinking ', 'about ', 'it.']) chunks.push(deltaChunk({ [field]: piece }))
  }
  const lastUser = messages.map((m) => m.role).lastIndexOf('user')
  const results = messages.slice(lastUser + 1).filter((m) => m.role === 'tool')
  const tools = (Array.isArray(body.tools) ? body.tools : []) as { function: { name: string } }[]
  const again = model.includes('loop')
  if (model.includes('tools') && (results.length === 0 || again) && tools.length > 0) {
    const query = String(messages[lastUser]?.content ?? '')
    const args = model.includes('badjson')
      ? '{"query": oops'
      : JSON.stringify({ query, text: query })
    // `call:<name>` in the user's text names the tools to call (offered or not); else the first two offered.
    const named = [...query.matchAll(/call:(\w+)/g)].map((match) => match[1] as string)
    const names = named.length > 0 ? named : tools.map((tool) => tool.function.name)
    const calls = names.slice(0, 2).map((name, index) => ({ index, name }))
    for (const { index, name } of calls)
      chunks.push(
        deltaChunk({
          tool_calls: [
            { index, id: `call_${index}`, type: 'function', function: { name, arguments: '' } },
          ],
        }),
      )
    // Each call's arguments in three pieces, the calls' pieces interleaved.
    const cuts = [0, 3, Math.floor(args.length / 2), args.length]
    for (let piece = 0; piece < 3; piece++)
      for (const { index } of calls)
        chunks.push(
          deltaChunk({
            tool_calls: [
              { index, function: { arguments: args.slice(cuts[piece], cuts[piece + 1]) } },
            ],
          }),
        )
    chunks.push(deltaChunk({}, 'tool_calls'))
    return chunks
  }
  const text =
    results.length > 0
      ? `Tool results: ${results.map((m) => m.content ?? '').join(' | ')}`
      : replyText(body)
  for (const word of text.match(/\S+\s*/g) ?? [text]) chunks.push(chunk(word))
  chunks.push(chunk('', 'stop'))
  return chunks
}

function stream(text: string, delayMs: number, given?: string[], raw?: string[]): Response {
  const pieces = raw ?? given ?? text.match(/\S+\s*/g) ?? [text]
  // A client that gives up (a timeout) cancels the stream: nothing more is written.
  let cancelled = false
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      for (const piece of pieces) {
        if (cancelled) return
        controller.enqueue(encoder.encode(raw ? piece : chunk(piece)))
        await Bun.sleep(delayMs)
      }
      if (cancelled) return
      controller.enqueue(encoder.encode(`${raw ? '' : chunk('', 'stop')}data: [DONE]\n\n`))
      controller.close()
    },
    cancel() {
      cancelled = true
    },
  })
  return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
}

async function chat(request: Request): Promise<Response> {
  const body = (await request.json()) as Record<string, unknown>
  const authorization = request.headers.get('authorization')
  recorded.push({ body, authorization })
  if (mode === 'failing')
    return Response.json(
      { error: { message: `The upstream model crashed (credential ${authorization ?? 'none'}).` } },
      { status: 500 },
    )
  const hostile = String(body.model).startsWith('hostile')
  if (body.stream !== true)
    return Response.json({
      choices: [
        { message: { role: 'assistant', content: hostile ? 'A\u0000 title' : 'A fake title' } },
      ],
    })
  const delayMs = Number(/-(\d+)ms$/.exec(String(body.model))?.[1] ?? chunkDelayMs)
  return stream(replyText(body), delayMs, hostile ? HOSTILE_PIECES : undefined, scripted(body))
}

const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  async fetch(request) {
    const { pathname } = new URL(request.url)
    if (request.method === 'POST' && pathname === '/v1/chat/completions') return chat(request)
    if (request.method === 'GET' && pathname === '/requests') return Response.json(recorded)
    return new Response('not found', { status: 404 })
  },
})
console.log(`listening ${server.port}`)
