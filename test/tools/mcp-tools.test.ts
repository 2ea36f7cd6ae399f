import { afterAll, afterEach, describe, expect, test } from 'bun:test'
import type { ToolCallContext, ToolCatalogue } from '../../src/tools/catalogue.ts'
import { type McpServerConfig, mcpTransport } from '../../src/tools/mcp-servers.ts'
import { McpSource } from '../../src/tools/mcp-source.ts'
import { createToolCatalogue } from '../../src/tools/tool-catalogue.ts'
import {
  type HttpTestServer,
  startHttpTestServer,
  stdioTestServer,
} from '../support/mcp-servers.ts'
import { freePort } from '../support/server-process.ts'

// The tool catalogue over REAL MCP server processes (test/support/mcp-test-server.ts,
// written with the official SDK): one spawned over stdio by the catalogue,
// one served over Streamable HTTP on loopback.

const MAX_CHARS = 5_000
const catalogues: ToolCatalogue[] = []
const httpServers: HttpTestServer[] = []
afterEach(async () => {
  await Promise.all(catalogues.splice(0).map((catalogue) => catalogue.close()))
})
afterAll(async () => {
  await Promise.all(httpServers.splice(0).map((server) => server.stop()))
})

function catalogueOf(servers: McpServerConfig[], timeoutMs = 20_000): ToolCatalogue {
  const catalogue = createToolCatalogue({
    sources: servers.map(
      (server) =>
        new McpSource({
          name: server.name,
          transport: () => mcpTransport(server),
          connectTimeoutMs: 20_000,
          listWaitMs: 20_000,
        }),
    ),
    timeoutMs,
    maxOutputChars: MAX_CHARS,
  })
  catalogues.push(catalogue)
  return catalogue
}

const context = (signal = new AbortController().signal): ToolCallContext => ({
  userId: 'u1',
  signal,
})
const names = async (catalogue: ToolCatalogue) => (await catalogue.list()).map((tool) => tool.name)

/** Waits for a condition that an event outside this process makes true (a list_changed notification). */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 20_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`never happened: ${what}`)
    await Bun.sleep(20)
  }
}

describe('MCP over stdio', () => {
  test('lists the server tools with their schemas and runs a call', async () => {
    const catalogue = catalogueOf([stdioTestServer('local')])
    const tools = await catalogue.list()
    expect(tools.map((tool) => tool.name)).toContain('echo')
    expect(tools.find((tool) => tool.name === 'echo')).toEqual({
      name: 'echo',
      description: 'Echoes text.',
      parameters: { type: 'object', properties: { text: { type: 'string' } } },
    })
    expect(await catalogue.call('echo', '{"text":"héllo 🌍"}', context())).toEqual({
      text: 'héllo 🌍',
      isError: false,
    })
    expect(await catalogue.call('fail', '{}', context())).toEqual({
      text: 'it went wrong',
      isError: true,
    })
  })

  test('a call that hangs is an error result at TOOL_TIMEOUT_MS, and the server still answers', async () => {
    const catalogue = catalogueOf([stdioTestServer('local')], 1_500)
    await catalogue.list()
    const result = await catalogue.call('hang', '{}', context())
    expect(result).toEqual({ text: 'The tool hang did not answer within 1.5 s.', isError: true })
    expect((await catalogue.call('echo', '{"text":"still here"}', context())).text).toBe(
      'still here',
    )
  })

  test('stop cancels a running call: an error result at once', async () => {
    const catalogue = catalogueOf([stdioTestServer('local')])
    await catalogue.list()
    const controller = new AbortController()
    const call = catalogue.call('hang', '{}', context(controller.signal))
    controller.abort('stop')
    expect(await call).toEqual({ text: 'The call was cancelled.', isError: true })
  })

  test('a server that exits mid-call: an error result, then a new process on the next call', async () => {
    const catalogue = catalogueOf([stdioTestServer('local')])
    await catalogue.list()
    const before = (await catalogue.call('pid', '{}', context())).text
    const crashed = await catalogue.call('crash', '{}', context())
    expect(crashed.isError).toBe(true)
    expect(crashed.text).toStartWith('The tool crash failed')
    const after = await catalogue.call('pid', '{}', context())
    expect(after.isError).toBe(false)
    expect(after.text).toMatch(/^\d+$/)
    expect(after.text).not.toBe(before)
    expect(await names(catalogue)).toContain('echo')
  })

  test('a 10 MB result arrives and is capped at TOOL_OUTPUT_MAX_CHARS with a note', async () => {
    const catalogue = catalogueOf([stdioTestServer('local')])
    const result = await catalogue.call('big', '{"chars":10000000}', context())
    expect(result.isError).toBe(false)
    expect(result.text.length).toBeLessThanOrEqual(MAX_CHARS)
    expect(result.text).toStartWith('xxxx')
    expect(result.text).toMatch(/\[… \d+ more characters cut\]$/)
    const kept = result.text.indexOf('\n')
    expect(Number(/(\d+) more/.exec(result.text)?.[1]) + kept).toBe(10_000_000)
  })

  test('unknown tool names and bad arguments are error results; nothing is called', async () => {
    const catalogue = catalogueOf([stdioTestServer('local')])
    expect(await catalogue.call('no_such_tool', '{}', context())).toEqual({
      text: 'There is no tool named "no_such_tool".',
      isError: true,
    })
    expect(await catalogue.call('echo', '{"text": oops', context())).toEqual({
      text: "The arguments are not valid JSON; send a JSON object matching the tool's parameters.",
      isError: true,
    })
    expect((await catalogue.call('echo', '[1,2]', context())).isError).toBe(true)
    expect((await catalogue.call('echo', '"text"', context())).isError).toBe(true)
    // Empty arguments are an empty object (some models send none for a tool without parameters).
    expect(await catalogue.call('pid', '', context())).toMatchObject({ isError: false })
  })

  test('two servers with the same tool names: each offered as <server>__<tool>', async () => {
    const catalogue = catalogueOf([stdioTestServer('alpha'), stdioTestServer('beta', 'b.')])
    const [one, two] = [stdioTestServer('one'), stdioTestServer('two')]
    const both = catalogueOf([one, two])
    const listed = await names(both)
    expect(listed).toContain('one__echo')
    expect(listed).toContain('two__echo')
    expect(listed).not.toContain('echo')
    expect((await both.call('two__echo', '{"text":"from two"}', context())).text).toBe('from two')
    // A name MCP allows but a model does not (the dot) is made safe, and still reaches its tool.
    const safe = await names(catalogue)
    expect(safe).toContain('echo')
    expect(safe).toContain('b_echo')
    expect((await catalogue.call('b_echo', '{"text":"dotted"}', context())).text).toBe('dotted')
  })

  test('a tool list change is picked up (notifications/tools/list_changed)', async () => {
    const catalogue = catalogueOf([stdioTestServer('local')])
    expect(await names(catalogue)).not.toContain('added')
    await catalogue.call('add_tool', '{}', context())
    await eventually(
      async () => (await names(catalogue)).includes('added'),
      'the added tool listed',
    )
    expect((await catalogue.call('added', '{}', context())).text).toBe('I was added')
  })

  test('a command that cannot start offers no tools and fails no call; others still work', async () => {
    const broken: McpServerConfig = {
      name: 'broken',
      command: '/nonexistent/mcp-server',
      args: [],
      env: {},
    }
    const catalogue = catalogueOf([broken, stdioTestServer('local')])
    catalogue.start()
    const listed = await names(catalogue)
    expect(listed).toContain('echo')
    const result = await catalogue.call('broken__echo', '{}', context())
    expect(result.isError).toBe(true)
  })
})

describe('a server that never answers its start', () => {
  test('start and list do not wait for it; its connect is given up at the deadline', async () => {
    const config: McpServerConfig = {
      name: 'silent',
      command: process.execPath,
      // Reads nothing, answers nothing: initialize never completes.
      args: ['-e', 'setInterval(() => {}, 1000)'],
      env: {},
    }
    const warned: string[] = []
    const catalogue = createToolCatalogue({
      sources: [
        new McpSource({
          name: 'silent',
          transport: () => mcpTransport(config),
          connectTimeoutMs: 1_000,
          listWaitMs: 100,
          warn: (message) => warned.push(message),
        }),
      ],
      timeoutMs: 20_000,
      maxOutputChars: MAX_CHARS,
    })
    catalogues.push(catalogue)
    catalogue.start()
    expect(await catalogue.list()).toEqual([])
    expect((await catalogue.call('echo', '{}', context())).isError).toBe(true)
    await eventually(
      async () => warned.includes('MCP server silent could not be connected'),
      'the connect given up',
    )
    expect(await catalogue.list()).toEqual([])
  })
})

describe('MCP over Streamable HTTP', () => {
  test('lists and calls; a hanging call times out', async () => {
    const server = await startHttpTestServer('remote')
    httpServers.push(server)
    const catalogue = catalogueOf([server.config], 1_500)
    expect(await names(catalogue)).toContain('echo')
    expect(await catalogue.call('echo', '{"text":"over http"}', context())).toEqual({
      text: 'over http',
      isError: false,
    })
    expect(await catalogue.call('hang', '{}', context())).toEqual({
      text: 'The tool hang did not answer within 1.5 s.',
      isError: true,
    })
  })

  test('a server that is down: no tools, an error result; once it is up, its tools come back', async () => {
    const port = freePort()
    const config: McpServerConfig = {
      name: 'later',
      url: `http://127.0.0.1:${port}/mcp`,
      headers: {},
    }
    const catalogue = createToolCatalogue({
      sources: [
        new McpSource({
          name: 'later',
          transport: () => mcpTransport(config),
          connectTimeoutMs: 20_000,
          listWaitMs: 20_000,
        }),
      ],
      timeoutMs: 20_000,
      maxOutputChars: MAX_CHARS,
    })
    catalogues.push(catalogue)
    catalogue.start()
    expect(await catalogue.list()).toEqual([])
    expect((await catalogue.call('echo', '{"text":"x"}', context())).isError).toBe(true)
    const server = await startHttpTestServer('later', port)
    httpServers.push(server)
    // The next list after the back-off (1 s after the failed connect) connects again.
    await eventually(async () => (await names(catalogue)).includes('echo'), 'its tools listed')
    expect((await catalogue.call('echo', '{"text":"back"}', context())).text).toBe('back')
    // Gone again mid-session: the call is an error result, the next one after a restart works.
    await server.stop()
    expect((await catalogue.call('echo', '{"text":"x"}', context())).isError).toBe(true)
    const again = await startHttpTestServer('later', port)
    httpServers.push(again)
    expect((await catalogue.call('echo', '{"text":"again"}', context())).text).toBe('again')
  })
})
