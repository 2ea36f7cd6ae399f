// The MCP test server (mcp-test-server.ts) as configured servers: a stdio
// entry (the catalogue starts and ends its processes), and a Streamable HTTP
// process on loopback started here and killed by stop() (by its own pid).
import { join } from 'node:path'
import type { McpServerConfig } from '../../src/tools/mcp-servers.ts'
import { spawnListening } from './listening-process.ts'

const SCRIPT = join(import.meta.dir, 'mcp-test-server.ts')

/** A stdio server entry; `prefix` goes before each of its tool names. */
export function stdioTestServer(name: string, prefix = ''): McpServerConfig {
  return {
    name,
    command: process.execPath,
    args: ['run', SCRIPT],
    env: { MCP_TEST_PREFIX: prefix },
  }
}

export interface HttpTestServer {
  port: number
  config: McpServerConfig
  stop(): Promise<void>
}

/** Starts the server over Streamable HTTP (on `port`, else one of its own). */
export async function startHttpTestServer(name: string, port = 0): Promise<HttpTestServer> {
  const server = await spawnListening(
    SCRIPT,
    { MCP_TEST_TRANSPORT: 'http', MCP_TEST_PORT: String(port) },
    'the MCP test server',
  )
  const listening = server.port
  return {
    port: listening,
    config: { name, url: `http://127.0.0.1:${listening}/mcp`, headers: { 'x-test': 'yes' } },
    stop: server.stop,
  }
}
