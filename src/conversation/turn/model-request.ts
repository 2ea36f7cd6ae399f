// What a turn sends its model (CONTRACT §15-§16): a system message - the
// model's own system_prompt, then the user's custom instructions when they
// are enabled (or those an imported conversation keeps) - followed by the branch's context cut from the oldest to fit
// the model's context_tokens minus max_tokens, with the send's temperature
// and reasoning effort. A user message's attachments (CONTRACT §20) are read
// here, by file id (the context list holds no bytes), into content parts.
import { type ResolvedFile, toModelContent } from '../../files/model-content.ts'
import { fileIdOf } from '../../files/multimodal-message.ts'
import { systemText } from '../instructions/instructions.ts'
import { type StoredMessage, type Turn, textOf } from '../messages.ts'
import type { CatalogueModel } from '../model/catalogue.ts'
import { fitContext } from '../model/context-budget.ts'
import type { ContextMessage, ModelRequest } from '../model/provider.ts'
import { ESTIMATE, type TokenCounter, tokenCounter } from '../model/token-count.ts'

/** What one message's documents may take when the model's window is not configured. */
const DEFAULT_DOCUMENT_TOKENS = 32_000
const MIN_DOCUMENT_TOKENS = 256
/** More characters than this per token: no tokenizer makes so few tokens of real text. */
const MAX_CHARS_PER_TOKEN = 32

/** Reads the files a context names (turn/attachments.ts readAttachments, with its deadline). */
export type ReadFiles = (ids: readonly string[]) => Promise<ResolvedFile[]>

/**
 * The request for `model` answering `turn` with `context` (oldest first),
 * before its abort signal. Files the context names are read once, with
 * `readFiles`; a user message with files becomes content parts (CONTRACT §20).
 */
export async function modelRequest(
  model: CatalogueModel,
  turn: Pick<Turn, 'metadata'>,
  context: readonly StoredMessage[],
  instructions: string | undefined,
  readFiles: ReadFiles = async () => [],
): Promise<Omit<ModelRequest, 'signal'>> {
  const counter = model.contextTokens === undefined ? ESTIMATE : await tokenCounter(model.tokenizer)
  const ids = [...new Set(context.flatMap(fileIdsOf))]
  const files = new Map((ids.length > 0 ? await readFiles(ids) : []).map((file) => [file.id, file]))
  const messages = fitContext(
    context.map((message) => contextMessage(message, files, model, counter)),
    systemText(model.systemPrompt, instructions),
    { contextTokens: model.contextTokens, maxTokens: model.maxTokens },
    counter,
  )
  const { temperature, reasoning_effort: reasoningEffort } = turn.metadata
  return {
    messages,
    ...(temperature === undefined ? {} : { temperature }),
    ...(reasoningEffort === undefined ? {} : { reasoningEffort }),
  }
}

/** The files a stored message names: its image pointers', then its attachments'. */
function fileIdsOf(message: StoredMessage): string[] {
  const parts: readonly unknown[] = message.content.parts
  return [
    ...parts.flatMap((part) =>
      typeof part === 'object' && part !== null && 'asset_pointer' in part
        ? [fileIdOf(String(part.asset_pointer)) ?? '']
        : [],
    ),
    ...(message.attachments ?? []).map((attachment) => attachment.id),
  ].filter((id) => id !== '')
}

/**
 * One message of the context. A user message naming files that are still
 * there has its content parts (model-content.ts: images only for a model with
 * vision, each document's text within the budget, cut with a note) and, as
 * its text, its text parts and documents for a model that reads text alone.
 */
function contextMessage(
  message: StoredMessage,
  files: ReadonlyMap<string, ResolvedFile>,
  model: CatalogueModel,
  counter: TokenCounter,
): ContextMessage {
  const own = [...new Set(fileIdsOf(message))].flatMap((id) => {
    const file = files.get(id)
    // An image a model cannot see is left out (a message from before the conversation changed model).
    return file && (model.vision || file.bytes === undefined) ? [file] : []
  })
  if (own.length === 0) return { role: message.role, content: textOf(message.content) }
  const budget = documentTokens(model)
  // A text far longer than the budget is over it without being counted whole.
  const countTokens = (text: string) =>
    text.length > budget * MAX_CHARS_PER_TOKEN ? Number.POSITIVE_INFINITY : counter.count(text)
  const parts = toModelContent(message.content.parts, own, {
    model: { slug: model.slug, vision: model.vision === true },
    documentTokens: budget,
    countTokens,
  })
  const text = parts.flatMap((part) => (part.type === 'text' ? [part.text] : [])).join('\n')
  return { role: message.role, content: text, parts }
}

/** What the documents of one message may take: half the window left beside the reply. */
function documentTokens(model: CatalogueModel): number {
  if (model.contextTokens === undefined) return DEFAULT_DOCUMENT_TOKENS
  return Math.max(MIN_DOCUMENT_TOKENS, Math.floor((model.contextTokens - model.maxTokens) / 2))
}
