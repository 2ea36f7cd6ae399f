// What a turn sends its model (CONTRACT §15-§16): a system message - the
// model's own system_prompt, then the user's custom instructions when they
// are enabled (or those an imported conversation keeps) - followed by the branch's context cut from the oldest to fit
// the model's context_tokens minus max_tokens, with the send's temperature
// and reasoning effort.
import { instructionsText, systemText } from '../instructions/instructions.ts'
import { type StoredMessage, textOf } from '../messages.ts'
import type { CatalogueModel } from '../model/catalogue.ts'
import { fitContext } from '../model/context-budget.ts'
import type { ModelRequest } from '../model/provider.ts'
import { ESTIMATE, tokenCounter } from '../model/token-count.ts'
import type { QueuedTurn } from '../sql/turn-repository.ts'
import type { TurnDeps } from './deps.ts'

/** The user's instructions as the model reads them; undefined when off or empty. */
export async function userInstructions(
  deps: Pick<TurnDeps, 'instructions'>,
  userId: string,
): Promise<string | undefined> {
  return instructionsText(await deps.instructions.get(userId))
}

/** The request for `model` answering `turn` with `context` (oldest first), before its abort signal. */
export async function modelRequest(
  model: CatalogueModel,
  turn: Pick<QueuedTurn, 'metadata'>,
  context: readonly StoredMessage[],
  instructions: string | undefined,
): Promise<Omit<ModelRequest, 'signal'>> {
  const counter = model.contextTokens === undefined ? ESTIMATE : await tokenCounter(model.tokenizer)
  const messages = fitContext(
    context.map((message) => ({ role: message.role, content: textOf(message.content) })),
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
