// The ToolCatalogue port (CONTRACT §21): what tools a model is offered, and
// running one call. A catalogue is made of sources (an MCP server, the
// built-in document_search); a source that is down offers nothing, and a call
// never throws: a failure, a timeout or a cancelled call is an error result
// the model reads.

/** A tool as a model is offered it: OpenAI's function tool (parameters: a JSON schema). */
export interface ToolDefinition {
  name: string
  description: string
  parameters: Record<string, unknown>
}

/** What a call gave back, as the model and the stored tool message see it. */
export interface ToolResult {
  text: string
  /** The call failed (the tool said so, or it could not be run): chatgpt.com's `metadata.is_error`. */
  isError: boolean
}

/** Who a call runs for, and when to give up on it. */
export interface ToolCallContext {
  /** The user of the turn: tools that read a user's data (document_search) see only theirs. */
  userId: string
  /** Aborted when the turn is stopped or shut down: the call is abandoned. */
  signal: AbortSignal
}

/** One source of tools: an MCP server, or built-in ones. */
export interface ToolSource {
  /** Names the source in logs and in the namespaced names of colliding tools. */
  readonly name: string
  /** The tools it offers now (none while it is down); may wait a short while to (re)connect. */
  tools(): Promise<ToolDefinition[]>
  /**
   * Runs one of its tools by its own name. May throw or hang: the catalogue
   * bounds it with the deadline in `signal` and turns a throw into an error result.
   */
  call(name: string, args: Record<string, unknown>, context: ToolCallContext): Promise<ToolResult>
  /** Connects ahead of the first use, in the background; never throws. */
  start?(): void
  close?(): Promise<void>
}

export interface ToolCatalogue {
  /** The tools offered now, under the names calls use (namespaced where two sources collide). */
  list(): Promise<ToolDefinition[]>
  /**
   * Runs a call as the model wrote it (`args`: JSON text, maybe invalid),
   * within TOOL_TIMEOUT_MS and `context.signal`; the result is capped at
   * TOOL_OUTPUT_MAX_CHARS. Never throws.
   */
  call(name: string, args: string, context: ToolCallContext): Promise<ToolResult>
  /** Starts connecting every source, without waiting. */
  start(): void
  close(): Promise<void>
}
