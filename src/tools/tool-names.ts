// The names tools are offered under. OpenAI-compatible servers take function
// names of 1 to 64 letters, digits, `_` and `-`; MCP allows more, so a name is
// made to fit. When two sources offer one name, each is offered as
// `<source>__<tool>`, so neither hides the other and the model can tell them apart.

const UNSAFE = /[^A-Za-z0-9_-]/g

/** A name a model can call: unsafe characters as `_`, at most 64 characters, never empty. */
export function safeToolName(name: string): string {
  return (name.replace(UNSAFE, '_') || '_').slice(0, 64)
}

export interface NamedTool<T> {
  source: string
  name: string
  value: T
}

/** Each tool with the name it is offered under; unique (a later exact duplicate of a source's own name is dropped). */
export function offeredNames<T>(tools: NamedTool<T>[]): Map<string, NamedTool<T>> {
  const count = new Map<string, number>()
  for (const tool of tools) {
    const name = safeToolName(tool.name)
    count.set(name, (count.get(name) ?? 0) + 1)
  }
  const offered = new Map<string, NamedTool<T>>()
  for (const tool of tools) {
    const plain = safeToolName(tool.name)
    const name = count.get(plain) === 1 ? plain : safeToolName(`${tool.source}__${tool.name}`)
    if (!offered.has(name)) offered.set(name, tool)
  }
  return offered
}
