// A turn that called a tool, taken over after its owner died (CONTRACT §13,
// §21): real server processes, a fake OpenAI-compatible model process
// scripted to call the tool named in the user's text, and a real MCP server
// process over Streamable HTTP (built on the official SDK) that counts the
// calls of its `tally` tool. The owner is killed (SIGKILL) once the call's
// result streamed. On one Postgres and one Redis another instance ends the
// turn from its log; on the embedded default (its log dies with it) the
// restarted process ends it from the row's checkpoint, which holds the
// steps' frames with the text. Either way the call and its result are stored
// as streamed, in the tree before the reply, and the tool ran exactly once.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  schemaForServers,
  TEST_DATABASE_URL,
  TEST_REDIS_URL,
  uniqueName,
} from './support/backends.ts'
import { type FakeOpenAi, startFakeOpenAi } from './support/fake-openai.ts'
import { type HttpTestServer, startHttpTestServer } from './support/mcp-servers.ts'
import {
  appendedChunks,
  dataItems,
  killAllServers,
  reading,
  type Server,
  send,
  startReadyServer,
  tempDataDir,
} from './support/server-process.ts'
import { completeFrames } from './support/sse-frames.ts'

const skip = !TEST_DATABASE_URL || !TEST_REDIS_URL

/** How often the MCP server on `port` ran `tally`, asked of it directly. */
async function tallies(port: number): Promise<number> {
  const client = new Client({ name: 'tool-takeover-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)))
  try {
    const result = (await client.callTool({ name: 'count', arguments: {} })) as {
      content: { text: string }[]
    }
    return Number(result.content[0]?.text)
  } finally {
    await client.close()
  }
}

interface StoredMessage {
  author: { role: string; name: string | null }
  content: { content_type: string; text?: string; parts?: unknown[] }
  recipient: string
  status: string
}

/** The stored branch of the conversation, root first: the messages from the root to its current node. */
async function storedPath(base: string, userId: string, conversationId: string) {
  const detail = (await (
    await fetch(`${base}/backend-api/conversation/${conversationId}`, {
      headers: { 'x-user-id': userId },
    })
  ).json()) as {
    current_node: string
    mapping: Record<string, { parent: string | null; message: StoredMessage | null }>
  }
  const path: StoredMessage[] = []
  for (let id: string | null = detail.current_node; id !== null; ) {
    const node: { parent: string | null; message: StoredMessage | null } | undefined =
      detail.mapping[id]
    if (!node) break
    if (node.message) path.unshift(node.message)
    id = node.parent
  }
  return path
}

/** The kinds of a path's messages, `role:content_type`. */
const kinds = (path: StoredMessage[]) =>
  path.map((message) => `${message.author.role}:${message.content.content_type}`)

const STEPS_AND_REPLY = ['user:text', 'assistant:code', 'tool:execution_output', 'assistant:text']

/** The catalogue of one tool-calling model on the fake OpenAI server. */
const tooledModels = (fake: FakeOpenAi) =>
  JSON.stringify([
    { slug: 'tooled', provider: 'openai', model: 'tools-t', base_url: fake.baseUrl, tools: true },
  ])

/** The conversation id a stream's frames name (its second item's). */
const conversationOf = (frames: string[]) =>
  dataItems(frames.join(''))[1]?.conversation_id as string

describe.skipIf(skip)('a tool turn taken over after its owner died', () => {
  let schema: Awaited<ReturnType<typeof schemaForServers>>
  let fake: FakeOpenAi
  let mcp: HttpTestServer
  let env: Record<string, string>
  let live: Server

  beforeAll(async () => {
    schema = await schemaForServers(TEST_DATABASE_URL as string, 'tools')
    // Slow words: the answer after the call streams for a while.
    ;[fake, mcp] = await Promise.all([
      startFakeOpenAi('slow', { chunkDelayMs: 400 }),
      startHttpTestServer('counter'),
    ])
    env = {
      DATABASE_URL: schema.databaseUrl,
      REDIS_URL: TEST_REDIS_URL as string,
      TURN_LEASE_MS: '1000',
      MODELS: tooledModels(fake),
      MCP_SERVERS: JSON.stringify([mcp.config]),
    }
    live = await startReadyServer(env)
  }, 90_000)

  afterAll(async () => {
    await killAllServers()
    await Promise.all([fake?.stop(), mcp?.stop()])
    await schema?.drop()
  })

  test('killed after the result streamed: the new owner stores call and result; the tool ran once', async () => {
    const owner = await startReadyServer(env)
    const userId = uniqueName('user')
    const stream = reading(await send(owner.base, userId, 'call:tally please', { model: 'tooled' }))
    await stream.until((text) => text.includes('"content_type":"execution_output"'))
    owner.proc.kill('SIGKILL')
    await owner.proc.exited
    const before = completeFrames(stream.text())
    const items = dataItems(before.join(''))
    const token = items.find((item) => item.type === 'resume_conversation_token')?.token as string
    const conversationId = items[1]?.conversation_id as string

    // Read on through the live instance: it takes the turn over and ends it.
    const rest = await (
      await fetch(`${live.base}/backend-api/f/conversation/resume`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-conduit-token': token },
        body: JSON.stringify({ conversation_id: conversationId, offset: before.length }),
      })
    ).text()
    expect(rest).toContain('"code":"interrupted"')
    expect(rest).toEndWith('data: [DONE]\n\n')

    const path = await storedPath(live.base, userId, conversationId)
    expect(kinds(path)).toEqual(STEPS_AND_REPLY)
    expect(path[1]?.recipient).toBe('tally')
    expect(path[2]?.content.text).toBe('tally 1')
    expect(path[3]?.status).toBe('finished_partial_completion')
    // The new owner ended the turn; it ran no call again.
    expect(await tallies(mcp.port)).toBe(1)
  }, 60_000)
})

describe('a tool turn of an embedded server killed mid-turn, ended by its restart', () => {
  let fake: FakeOpenAi
  let mcp: HttpTestServer

  beforeAll(async () => {
    // A word a second: the answer after the call (four words) is still streaming at the kill.
    ;[fake, mcp] = await Promise.all([
      startFakeOpenAi('slow', { chunkDelayMs: 1_000 }),
      startHttpTestServer('counter'),
    ])
  }, 90_000)

  afterAll(async () => {
    await killAllServers()
    await Promise.all([fake?.stop(), mcp?.stop()])
  })

  test('the steps checkpointed with the text are stored as streamed; the tool ran once', async () => {
    const env = {
      DATA_DIR: tempDataDir(),
      TURN_LEASE_MS: '1000',
      MODELS: tooledModels(fake),
      MCP_SERVERS: JSON.stringify([mcp.config]),
    }
    const owner = await startReadyServer(env)
    const userId = uniqueName('user')
    const stream = reading(await send(owner.base, userId, 'call:tally please', { model: 'tooled' }))
    // The answer's second word, a second after its first (which comes with
    // the result): a checkpoint, every third of the lease, has saved the
    // steps with the text by then.
    await stream.until((text) => {
      const result = text.indexOf('"content_type":"execution_output"')
      return result !== -1 && appendedChunks(text.slice(result)).length >= 2
    })
    owner.proc.kill('SIGKILL')
    await owner.proc.exited
    const streamed = completeFrames(stream.text())
    const conversationId = conversationOf(streamed)

    // The restarted process (same DATA_DIR) takes the turn over once its row went stale.
    const restarted = await startReadyServer(env)
    const deadline = Date.now() + 20_000
    let path = await storedPath(restarted.base, userId, conversationId)
    while (path.at(-1)?.status === 'in_progress' && Date.now() < deadline) {
      await Bun.sleep(100)
      path = await storedPath(restarted.base, userId, conversationId)
    }
    expect(kinds(path)).toEqual(STEPS_AND_REPLY)
    expect(path[1]?.recipient).toBe('tally')
    expect(path[2]?.content.text).toBe('tally 1')
    expect(path[3]?.status).toBe('finished_partial_completion')
    // The stored text is what streamed, at most a tick short of it.
    const stored = String(path[3]?.content.parts?.[0] ?? '')
    const sent = appendedChunks(streamed.join('')).join('')
    expect(stored.length).toBeGreaterThan(0)
    expect(sent.startsWith(stored)).toBe(true)
    expect(await tallies(mcp.port)).toBe(1)
  }, 60_000)
})
