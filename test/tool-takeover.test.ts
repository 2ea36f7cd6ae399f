// A turn that called a tool, taken over after its owner died (CONTRACT §13,
// §21): real server processes on one Postgres and one Redis, a fake
// OpenAI-compatible model process scripted to call the tool named in the
// user's text, and a real MCP server process over Streamable HTTP (built on
// the official SDK) that counts the calls of its `tally` tool. The owner is
// killed (SIGKILL) once the call's result streamed; another instance ends
// the turn from its log: the call and its result are stored as streamed, in
// the tree before the reply, and the tool was run exactly once.
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
  dataItems,
  killAllServers,
  reading,
  type Server,
  send,
  startReadyServer,
} from './support/server-process.ts'
import { completeFrames } from './support/sse-frames.ts'

const skip = !TEST_DATABASE_URL || !TEST_REDIS_URL

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
      MODELS: JSON.stringify([
        {
          slug: 'tooled',
          provider: 'openai',
          model: 'tools-t',
          base_url: fake.baseUrl,
          tools: true,
        },
      ]),
      MCP_SERVERS: JSON.stringify([mcp.config]),
    }
    live = await startReadyServer(env)
  }, 90_000)

  afterAll(async () => {
    await killAllServers()
    await Promise.all([fake?.stop(), mcp?.stop()])
    await schema?.drop()
  })

  /** How often the MCP server ran `tally`, asked of it directly. */
  async function tallies(): Promise<number> {
    const client = new Client({ name: 'tool-takeover-test', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${mcp.port}/mcp`)),
    )
    try {
      const result = (await client.callTool({ name: 'count', arguments: {} })) as {
        content: { text: string }[]
      }
      return Number(result.content[0]?.text)
    } finally {
      await client.close()
    }
  }

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

    const detail = (await (
      await fetch(`${live.base}/backend-api/conversation/${conversationId}`, {
        headers: { 'x-user-id': userId },
      })
    ).json()) as {
      current_node: string
      mapping: Record<
        string,
        {
          parent: string | null
          message: {
            author: { role: string; name: string | null }
            content: { content_type: string; text?: string }
            recipient: string
            status: string
          } | null
        }
      >
    }
    type Node = (typeof detail.mapping)[string]
    const path: NonNullable<Node['message']>[] = []
    for (let id: string | null = detail.current_node; id !== null; ) {
      const node: Node | undefined = detail.mapping[id]
      if (!node) break
      if (node.message) path.unshift(node.message)
      id = node.parent
    }
    expect(path.map((message) => `${message.author.role}:${message.content.content_type}`)).toEqual(
      ['user:text', 'assistant:code', 'tool:execution_output', 'assistant:text'],
    )
    expect(path[1]?.recipient).toBe('tally')
    expect(path[2]?.content.text).toBe('tally 1')
    expect(path[3]?.status).toBe('finished_partial_completion')
    // The new owner ended the turn; it ran no call again.
    expect(await tallies()).toBe(1)
  }, 60_000)
})
