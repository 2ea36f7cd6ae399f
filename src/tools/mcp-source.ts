// One MCP server as a ToolSource, through the SDK's Client. It connects in the
// background at start (start()) or on first use, never holding up the
// service; while it is down it offers no tools, and the next use after a
// failure connects again (after a back-off when connecting itself failed).
// Its tool list is read on every connect and refreshed when the server says
// it changed (`notifications/tools/list_changed`). A connection that closes
// (a stdio server that exited) or that fails under a call (an HTTP server
// gone, its session lost) is dropped, so the next use starts a new one.
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js'
import type { ToolCallContext, ToolDefinition, ToolResult, ToolSource } from './catalogue.ts'
import { mcpResultText } from './tool-result.ts'

export interface McpSourceOptions {
  name: string
  /** A new transport for each connection attempt (mcp-servers.ts). */
  transport: () => Transport
  /** Longest a connect (start, initialize, first tool list) may take. */
  connectTimeoutMs: number
  /** Longest tools() waits for a connect under way before answering with none. */
  listWaitMs: number
  warn?: (message: string, error: unknown) => void
}

/** Back-off after a failed connect: 1 s, doubling, at most a minute. */
const RETRY_MIN_MS = 1_000
const RETRY_MAX_MS = 60_000
/** Pages of tools/list read at most (a server paging forever is cut there). */
const MAX_LIST_PAGES = 20

const definitionOf = (tool: Tool): ToolDefinition => ({
  name: tool.name,
  description: tool.description ?? tool.title ?? '',
  parameters: tool.inputSchema as Record<string, unknown>,
})

function timeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)
  })
  return Promise.race([work, late]).finally(() => clearTimeout(timer))
}

/** Whether an error under a call means the connection is gone, not just that the call failed. */
function connectionLost(error: unknown): boolean {
  if (error instanceof McpError) return error.code === ErrorCode.ConnectionClosed
  // Not a JSON-RPC answer at all: the transport failed (fetch refused, HTTP 404 for a lost session).
  return true
}

export class McpSource implements ToolSource {
  readonly name: string
  private client: Client | undefined
  private tools_: ToolDefinition[] = []
  private connecting: Promise<Client | undefined> | undefined
  private failures = 0
  private retryAt = 0
  private closed = false

  constructor(private readonly options: McpSourceOptions) {
    this.name = options.name
  }

  start(): void {
    void this.connect()
  }

  async tools(): Promise<ToolDefinition[]> {
    if (this.client) return this.tools_
    const connecting = this.connect()
    let timer: ReturnType<typeof setTimeout> | undefined
    const waited = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), this.options.listWaitMs)
    })
    await Promise.race([connecting, waited]).finally(() => clearTimeout(timer))
    return this.client ? this.tools_ : []
  }

  async call(
    name: string,
    args: Record<string, unknown>,
    context: ToolCallContext,
  ): Promise<ToolResult> {
    // A call made while the server is down waits for a new connection (its deadline bounds it).
    const client = this.client ?? (await this.connect(true))
    if (!client) throw new Error(`the MCP server ${this.name} is not available`)
    try {
      const result = await client.callTool({ name, arguments: args }, undefined, {
        signal: context.signal,
        // The catalogue's deadline is the one that counts; this only keeps the SDK from its own 60 s.
        timeout: 2 ** 31 - 1,
      })
      return { text: mcpResultText(result), isError: result.isError === true }
    } catch (error) {
      if (!context.signal.aborted && connectionLost(error)) this.drop(client)
      throw error
    }
  }

  async close(): Promise<void> {
    this.closed = true
    const client = this.client
    this.client = undefined
    this.tools_ = []
    await Promise.allSettled([client?.close(), this.connecting])
  }

  /** Connects unless connected or connecting; resolves with the client, or undefined when it failed. */
  private connect(ignoreBackoff = false): Promise<Client | undefined> {
    if (this.client) return Promise.resolve(this.client)
    if (this.connecting) return this.connecting
    if (this.closed || (!ignoreBackoff && Date.now() < this.retryAt))
      return Promise.resolve(undefined)
    this.connecting = this.open().finally(() => {
      this.connecting = undefined
    })
    return this.connecting
  }

  private async open(): Promise<Client | undefined> {
    const client = new Client(
      { name: 'conduit', version: '1.0.0' },
      {
        listChanged: {
          tools: {
            onChanged: (error, tools) => {
              if (error)
                this.options.warn?.(
                  `tools of MCP server ${this.name} could not be refreshed`,
                  error,
                )
              else if (tools && this.client === client) this.tools_ = tools.map(definitionOf)
            },
          },
        },
      },
    )
    client.onclose = () => this.drop(client)
    // The transport's own errors also surface as a failed request or a close.
    client.onerror = () => {}
    try {
      const tools = await timeout(
        (async () => {
          await client.connect(this.options.transport())
          return this.listAll(client)
        })(),
        this.options.connectTimeoutMs,
        `connecting to MCP server ${this.name}`,
      )
      if (this.closed) {
        await client.close()
        return undefined
      }
      this.client = client
      this.tools_ = tools
      this.failures = 0
      return client
    } catch (error) {
      this.failures++
      this.retryAt = Date.now() + Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** (this.failures - 1))
      this.options.warn?.(`MCP server ${this.name} could not be connected`, error)
      // Ends a process that started but never answered.
      await client.close().catch(() => {})
      return undefined
    }
  }

  private async listAll(client: Client): Promise<ToolDefinition[]> {
    const tools: ToolDefinition[] = []
    let cursor: string | undefined
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const listed = await client.listTools(cursor === undefined ? {} : { cursor })
      tools.push(...listed.tools.map(definitionOf))
      cursor = listed.nextCursor
      if (!cursor) break
    }
    return tools
  }

  /** Forgets a connection that is gone (once), and ends whatever is left of it. */
  private drop(client: Client): void {
    if (this.client !== client) return
    this.client = undefined
    this.tools_ = []
    void client.close().catch(() => {})
  }
}
