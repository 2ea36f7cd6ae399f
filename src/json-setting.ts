// A JSON array setting given inline (NAME) or as a file (NAME_FILE): the
// model catalogue (MODELS) and the MCP servers (MCP_SERVERS). Read and parsed
// once, at startup; a problem is one line naming the variable that never
// quotes the text, which may hold a pasted key.
import { readFileSync } from 'node:fs'

/** Where the setting came from (the variable named in errors) and its parsed value. */
export interface JsonSetting {
  source: string
  value: unknown
}

/**
 * The setting of `name` or `${name}_FILE`, parsed; undefined when neither is
 * set. Throws what `fail` makes of a one-line message when both are set, the
 * file cannot be read, or the text is not JSON (`what`: "an array of models").
 */
export function readJsonSetting(
  env: Record<string, string | undefined>,
  name: string,
  what: string,
  fail: (message: string) => Error,
): JsonSetting | undefined {
  const fileName = `${name}_FILE`
  const inline = env[name]
  const file = env[fileName]
  if (inline && file) throw fail(`set ${name} or ${fileName}, not both`)
  let source = name
  let text = inline
  if (!inline) {
    if (!file) return undefined
    source = fileName
    try {
      text = readFileSync(file, 'utf8')
    } catch {
      throw fail(`${fileName} must name a readable file; cannot read "${file}"`)
    }
  }
  try {
    return { source, value: JSON.parse(text ?? '') }
  } catch {
    // The parser's message quotes the text.
    throw fail(`${source} must be a JSON ${what}; it is not valid JSON`)
  }
}
