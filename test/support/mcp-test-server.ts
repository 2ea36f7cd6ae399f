// An MCP server for tests, written with the official SDK and run as a real
// process: over stdio by default, or over Streamable HTTP on loopback with
// MCP_TEST_TRANSPORT=http (stateless; MCP_TEST_PORT picks the port, else
// one of its own; it prints `listening <port>`). MCP_TEST_PREFIX is put
// before every tool name (two servers with the same tools, or not).
// Its tools:
// - echo {text}: answers the text; `pid`: answers its process id;
// - hang: never answers; crash: exits the process mid-call;
// - big {chars}: answers that many characters (10 MB and more);
// - fail: answers with isError; tally: counts its calls, count: says how
//   many (a test sees a call was run once); add_tool: adds the tool `added` and says the
//   tool list changed (stdio only: stateless HTTP has no channel to say it).
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'

const prefix = process.env.MCP_TEST_PREFIX ?? ''
let added = false
/** Calls of `tally` this process answered (over HTTP: across every request). */
let tally = 0

const object = (properties: Record<string, unknown> = {}) => ({ type: 'object', properties })
function tools() {
  const list = [
    {
      name: 'echo',
      description: 'Echoes text.',
      inputSchema: object({ text: { type: 'string' } }),
    },
    { name: 'pid', description: 'The server process id.', inputSchema: object() },
    { name: 'hang', description: 'Never answers.', inputSchema: object() },
    { name: 'crash', description: 'Exits mid-call.', inputSchema: object() },
    {
      name: 'big',
      description: 'A long answer.',
      inputSchema: object({ chars: { type: 'integer' } }),
    },
    { name: 'fail', description: 'Fails.', inputSchema: object() },
    { name: 'tally', description: 'Counts its calls; answers the count.', inputSchema: object() },
    { name: 'count', description: 'How often tally was called.', inputSchema: object() },
    { name: 'add_tool', description: 'Adds a tool.', inputSchema: object() },
    ...(added ? [{ name: 'added', description: 'Added later.', inputSchema: object() }] : []),
  ]
  return list.map((tool) => ({ ...tool, name: prefix + tool.name }))
}

const text = (value: string, isError = false) => ({
  content: [{ type: 'text' as const, text: value }],
  isError,
})

function newServer(): Server {
  const server = new Server(
    { name: 'conduit-test', version: '1.0.0' },
    { capabilities: { tools: { listChanged: true } } },
  )
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: tools() }))
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const name = request.params.name.slice(prefix.length)
    const args = request.params.arguments ?? {}
    switch (name) {
      case 'echo':
        return text(String(args.text ?? ''))
      case 'pid':
        return text(String(process.pid))
      case 'hang':
        return new Promise<never>(() => {})
      case 'crash':
        process.exit(3)
        break
      case 'big':
        return text('x'.repeat(Number(args.chars ?? 10_000_000)))
      case 'fail':
        return text('it went wrong', true)
      case 'tally':
        tally++
        return text(`tally ${tally}`)
      case 'count':
        return text(String(tally))
      case 'add_tool':
        added = true
        await server.sendToolListChanged()
        return text('added')
      case 'added':
        return text('I was added')
    }
    throw new Error(`unknown tool ${request.params.name}`)
  })
  return server
}

if (process.env.MCP_TEST_TRANSPORT === 'http') {
  const http = Bun.serve({
    port: Number(process.env.MCP_TEST_PORT ?? 0),
    hostname: '127.0.0.1',
    idleTimeout: 0,
    async fetch(request) {
      // Stateless: a server and a transport per request, as the SDK's examples do.
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
      })
      await newServer().connect(transport)
      return transport.handleRequest(request)
    },
  })
  console.log(`listening ${http.port}`)
} else {
  await newServer().connect(new StdioServerTransport())
}
