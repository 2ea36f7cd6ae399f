// Tool results as the model reads them: capped at TOOL_OUTPUT_MAX_CHARS (a
// tool may answer with megabytes; the context and the stored message must
// not), and the text of an MCP result's content blocks.
import type { ToolResult } from './catalogue.ts'

export const errorResult = (text: string): ToolResult => ({ text, isError: true })

/** The result cut to `max` characters, with a note saying how much was cut (the note fits within `max`). */
export function capResult(result: ToolResult, max: number): ToolResult {
  if (result.text.length <= max) return result
  const note = (cut: number) => `\n[… ${cut} more characters cut]`
  // The note's length depends on the number it holds; two passes settle it.
  let keep = Math.max(0, max - note(result.text.length).length)
  keep = Math.max(0, max - note(result.text.length - keep).length)
  // Never end on half a surrogate pair.
  const code = result.text.charCodeAt(keep - 1)
  if (code >= 0xd800 && code <= 0xdbff) keep--
  const text = result.text.slice(0, keep) + note(result.text.length - keep)
  return { ...result, text: text.length <= max ? text : text.slice(0, max) }
}

/** One MCP content block, loosely: the fields read here. */
interface ContentBlock {
  type?: unknown
  text?: unknown
  mimeType?: unknown
  uri?: unknown
  resource?: { uri?: unknown; text?: unknown; mimeType?: unknown }
}

/** The text of an MCP `tools/call` result: text blocks as they are, other blocks named. */
export function mcpResultText(result: Record<string, unknown>): string {
  const blocks = Array.isArray(result.content) ? (result.content as ContentBlock[]) : []
  const texts = blocks.map((block) => {
    if (block.type === 'text' && typeof block.text === 'string') return block.text
    if (block.type === 'resource' && typeof block.resource?.text === 'string')
      return block.resource.text
    if (block.type === 'resource_link' && typeof block.uri === 'string')
      return `[resource ${block.uri}]`
    const mime = typeof block.mimeType === 'string' ? ` ${block.mimeType}` : ''
    return `[${String(block.type ?? 'content')}${mime}]`
  })
  if (texts.length === 0 && result.structuredContent !== undefined)
    return JSON.stringify(result.structuredContent)
  return texts.join('\n')
}
