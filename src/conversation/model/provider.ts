// The ModelProvider port: given the conversation context, stream the reply as
// text chunks (or as typed events: text, reasoning, tool calls), and
// optionally name a conversation. Adapters: local.ts (deterministic, no
// network, no titles, text only), openai.ts.

/** A tool a model may call (OpenAI's function tool): its parameters are a JSON schema. */
export interface ToolSpec {
  name: string
  description: string
  parameters: Record<string, unknown>
}

/** One complete tool call of a model's round. */
export interface ToolCall {
  /** The model's id for the call (made up when the server sent none); a tool result names it. */
  id: string
  name: string
  /** The JSON text the model wrote, as written: it may not be valid JSON. */
  arguments: string
}

/** A part of a message's content in OpenAI's shape: text, or an image (a data URL). */
export type ContentPart =
  | { type: 'text'; text: string }
  | { type: 'image_url'; image_url: { url: string } }

/** One message of the context handed to a model. */
export interface ContextMessage {
  /**
   * `system`: the model's system prompt and the user's custom instructions,
   * first if any. `tool`: a tool's result, within the turn that called it.
   */
  role: 'system' | 'user' | 'assistant' | 'tool'
  /** The message's text: with attachments, its text parts and its documents' text (CONTRACT §20). */
  content: string
  /**
   * A user message with attachments as content parts (images for a model with
   * vision, documents' text): what a provider that takes parts sends instead
   * of `content`. Absent for a message of text alone.
   */
  parts?: ContentPart[]
  /** An assistant message's tool calls (within the turn that made them). */
  toolCalls?: ToolCall[]
  /** A tool message: the call it answers. */
  toolCallId?: string
}

/**
 * What a reply streams, in order: text and reasoning deltas as they come;
 * each tool call once it is complete (its argument pieces assembled), at the
 * end of the round.
 */
export type ModelEvent =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool_call'; call: ToolCall }

export interface ModelRequest {
  /**
   * Oldest first: a system message when there is one, then at most the last
   * 20 messages of the branch, cut to fit the model's window.
   */
  messages: ContextMessage[]
  temperature?: number
  /** OpenAI's `reasoning_effort` (`low`, `medium`, `high`, …); models that take none ignore it. */
  reasoningEffort?: string
  /** Tools the model may call; absent or empty: none are offered. */
  tools?: ToolSpec[]
  /** Aborted when the turn is cancelled (shutdown); the stream must stop. */
  signal?: AbortSignal
}

/** What a title is written from: the conversation's first user message (asked while the reply streams). */
export interface TitleRequest {
  userText: string
  /** Aborted when the title is no longer wanted (the turn ended without waiting for it). */
  signal?: AbortSignal
}

export interface ModelProvider {
  /** Reported as `metadata.model_slug`. */
  readonly slug: string
  /**
   * Streams the reply as non-empty text chunks, in order. Throws ModelError on
   * an upstream failure or when no chunk arrives within the timeout.
   */
  stream(request: ModelRequest): AsyncIterable<string>
  /**
   * The reply as typed events (text, reasoning, tool calls); throws as
   * `stream` does. Absent for a model that only writes text: model-events.ts
   * then reads `stream` as text events.
   */
  events?(request: ModelRequest): AsyncIterable<ModelEvent>
  /**
   * Writes a short title for a new conversation (CONTRACT §11). Absent when
   * the model does not write titles; the caller then, as when this throws,
   * names the conversation after its first message.
   */
  title?(request: TitleRequest): Promise<string>
}

/** A model failure; `detail` is safe to show to the user (no secrets, no URLs with keys). */
export class ModelError extends Error {
  constructor(readonly detail: string) {
    super(detail)
    this.name = 'ModelError'
  }
}
