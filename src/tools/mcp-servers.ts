// An MCP server as configured (MCP_SERVERS / MCP_SERVERS_FILE, read by
// src/mcp-servers-config.ts), and the SDK transport that reaches it: a child
// process over stdio, or Streamable HTTP.
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js'

export type McpServerConfig =
  | { name: string; command: string; args: string[]; env: Record<string, string> }
  | { name: string; url: string; headers: Record<string, string> }

/**
 * The largest message a stdio server may send: above the SDK's 10 MB, so a
 * large result arrives (and is then capped) instead of killing the server.
 */
export const MCP_STDIO_MAX_MESSAGE_BYTES = 32 * 2 ** 20

/** A fresh transport for one connection attempt. */
export function mcpTransport(server: McpServerConfig): Transport {
  if ('command' in server)
    return new StdioClientTransport({
      command: server.command,
      args: server.args,
      env: server.env,
      // A server's own logging stays out of the service's log stream.
      stderr: 'ignore',
      maxBufferSize: MCP_STDIO_MAX_MESSAGE_BYTES,
    })
  return new StreamableHTTPClientTransport(new URL(server.url), {
    requestInit: { headers: server.headers },
  })
}
