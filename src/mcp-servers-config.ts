// The MCP servers as configured (CONTRACT §21): MCP_SERVERS (a JSON array) or
// MCP_SERVERS_FILE (a JSON file holding one). An entry is a stdio server
// (`{"name","command","args","env"}`) or a Streamable HTTP one
// (`{"name","url","headers"}`); a bad entry stops the process with one line
// naming it. `env` and `headers` values usually hold secrets: they are never
// echoed, nor is a URL (it may carry a token).
import { Type } from '@sinclair/typebox'
import { Value, ValueErrorType } from '@sinclair/typebox/value'
import { readJsonSetting } from './json-setting.ts'
import type { McpServerConfig } from './tools/mcp-servers.ts'

export type { McpServerConfig } from './tools/mcp-servers.ts'

const MAX_SERVERS = 32
/** Becomes part of tool names (`<server>__<tool>`), so the characters a function name takes. */
const NAME_PATTERN = '^[A-Za-z0-9_-]{1,32}$'

const Strings = Type.Record(Type.String(), Type.String())
const Entry = Type.Object(
  {
    name: Type.String({ pattern: NAME_PATTERN }),
    command: Type.Optional(Type.String({ minLength: 1 })),
    args: Type.Optional(Type.Array(Type.String(), { maxItems: 256 })),
    env: Type.Optional(Strings),
    url: Type.Optional(Type.String({ format: 'conduit-http-url' })),
    headers: Type.Optional(Strings),
  },
  { additionalProperties: false },
)
type Entry = typeof Entry.static
const Servers = Type.Array(Entry, { maxItems: MAX_SERVERS })

const EXPECTED: Record<string, string> = {
  name: 'up to 32 letters, digits, _ and -',
  command: 'a non-empty text',
  args: 'an array of texts',
  env: 'an object of texts',
  url: 'an http:// or https:// URL',
  headers: 'an object of texts',
}

export class McpServersConfigError extends Error {}

type Env = Record<string, string | undefined>

function firstError(source: string, value: unknown): string | undefined {
  const error = Value.Errors(Servers, value).First()
  if (error === undefined) return undefined
  const [index, field] = error.path.split('/').slice(1)
  if (index === undefined)
    return `${source} must be a JSON array of at most ${MAX_SERVERS} servers ({"name","command"} or {"name","url"})`
  const where = `${source}[${index}]`
  if (field === undefined)
    return `${where} must be an object ({"name","command"} or {"name","url"})`
  if (error.type === ValueErrorType.ObjectAdditionalProperties)
    return `${where} has a field that is not a field of a server (fields: ${Object.keys(EXPECTED).join(', ')})`
  if (error.type === ValueErrorType.ObjectRequiredProperty) return `${where}.${field} is required`
  return `${where}.${field} must be ${EXPECTED[field] ?? 'valid'}`
}

function checked(source: string, entries: Entry[]): McpServerConfig[] {
  const seen = new Set<string>()
  return entries.map((entry, index) => {
    const where = `${source}[${index}]`
    if (seen.has(entry.name))
      throw new McpServersConfigError(`${where}.name repeats "${entry.name}": names must be unique`)
    seen.add(entry.name)
    if ((entry.command === undefined) === (entry.url === undefined))
      throw new McpServersConfigError(
        `${where} must have either "command" (stdio) or "url" (Streamable HTTP)`,
      )
    if (entry.command !== undefined) {
      if (entry.headers !== undefined)
        throw new McpServersConfigError(`${where}.headers is only for a server with a "url"`)
      return {
        name: entry.name,
        command: entry.command,
        args: entry.args ?? [],
        env: entry.env ?? {},
      }
    }
    for (const name of ['args', 'env'] as const)
      if (entry[name] !== undefined)
        throw new McpServersConfigError(`${where}.${name} is only for a server with a "command"`)
    return { name: entry.name, url: entry.url as string, headers: entry.headers ?? {} }
  })
}

/** The configured MCP servers (none when neither variable is set); McpServersConfigError on a bad entry. */
export function readMcpServers(env: Env): McpServerConfig[] {
  const raw = readJsonSetting(
    env,
    'MCP_SERVERS',
    'array of servers',
    (message) => new McpServersConfigError(message),
  )
  if (!raw) return []
  const problem = firstError(raw.source, raw.value)
  if (problem !== undefined) throw new McpServersConfigError(problem)
  return checked(raw.source, raw.value as Entry[])
}
