import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError, loadConfig, type McpServerConfig } from '../../src/config.ts'

// MCP_SERVERS / MCP_SERVERS_FILE and the TOOL_* limits (CONTRACT §21).

const dir = mkdtempSync(join(tmpdir(), 'conduit-mcp-config-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function problem(env: Record<string, string>): string {
  try {
    loadConfig(env)
  } catch (error) {
    if (error instanceof ConfigError) return error.message
    throw error
  }
  throw new Error('expected a ConfigError')
}

describe('MCP_SERVERS', () => {
  test('unset: no servers, and the TOOL_* defaults', () => {
    expect(loadConfig({}).tools).toEqual({
      mcpServers: [],
      timeoutMs: 30_000,
      maxOutputChars: 20_000,
      maxSteps: 5,
    })
  })

  test('stdio and Streamable HTTP entries, inline or from a file', () => {
    const servers: Record<string, unknown>[] = [
      {
        name: 'files',
        command: 'npx',
        args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv'],
      },
      {
        name: 'remote',
        url: 'https://mcp.example.com/mcp',
        headers: { authorization: 'Bearer s3cret' },
      },
      { name: 'git', command: 'uvx', env: { GIT_DIR: '/repo' } },
    ]
    const expected: McpServerConfig[] = [
      {
        name: 'files',
        command: 'npx',
        args: ['-y', '@modelcontextprotocol/server-filesystem', '/srv'],
        env: {},
      },
      {
        name: 'remote',
        url: 'https://mcp.example.com/mcp',
        headers: { authorization: 'Bearer s3cret' },
      },
      { name: 'git', command: 'uvx', args: [], env: { GIT_DIR: '/repo' } },
    ]
    expect(loadConfig({ MCP_SERVERS: JSON.stringify(servers) }).tools.mcpServers).toEqual(expected)
    const file = join(dir, 'servers.json')
    writeFileSync(file, JSON.stringify(servers))
    expect(loadConfig({ MCP_SERVERS_FILE: file }).tools.mcpServers).toEqual(expected)
  })

  test('a bad entry stops the start with one line naming it, never echoing a secret', () => {
    const cases: [unknown, string][] = [
      [{ name: 'x' }, 'MCP_SERVERS must be a JSON array'],
      [[{ command: 'a' }], 'MCP_SERVERS[0].name is required'],
      [[{ name: 'bad name', command: 'a' }], 'MCP_SERVERS[0].name must be up to 32 letters'],
      [[{ name: 'a' }], 'MCP_SERVERS[0] must have either "command" (stdio) or "url"'],
      [[{ name: 'a', command: 'x', url: 'http://h/' }], 'must have either "command"'],
      [
        [{ name: 'a', url: 'ftp://secret@h/' }],
        'MCP_SERVERS[0].url must be an http:// or https:// URL',
      ],
      [
        [{ name: 'a', url: 'http://h/', env: { K: 'v' } }],
        'MCP_SERVERS[0].env is only for a server with a "command"',
      ],
      [[{ name: 'a', command: 'x', headers: { k: 'v' } }], 'MCP_SERVERS[0].headers is only for'],
      [
        [{ name: 'a', command: 'x', env: { K: 1 } }],
        'MCP_SERVERS[0].env must be an object of texts',
      ],
      [
        [{ name: 'a', command: 'x', token: 'sk-secret' }],
        'MCP_SERVERS[0] has a field that is not a field',
      ],
      [
        [
          { name: 'a', command: 'x' },
          { name: 'a', url: 'http://h/' },
        ],
        'MCP_SERVERS[1].name repeats "a"',
      ],
    ]
    for (const [value, expected] of cases) {
      const message = problem({ MCP_SERVERS: JSON.stringify(value) })
      expect(message).toContain(expected)
      expect(message).not.toContain('secret')
      expect(message).not.toContain('\n')
    }
    expect(problem({ MCP_SERVERS: '[{"name": "sk-secret' })).toBe(
      'MCP_SERVERS must be a JSON array of servers; it is not valid JSON',
    )
    expect(problem({ MCP_SERVERS: '[]', MCP_SERVERS_FILE: 'x' })).toContain('not both')
    expect(problem({ MCP_SERVERS_FILE: join(dir, 'missing.json') })).toContain(
      'MCP_SERVERS_FILE must name a readable file',
    )
    expect(problem({ TOOL_TIMEOUT_MS: '0' })).toContain('TOOL_TIMEOUT_MS')
    expect(problem({ TOOL_MAX_STEPS: 'many' })).toContain('TOOL_MAX_STEPS')
  })
})
