// Fitting a context to a model's window (CONTRACT §15): the branch's last 20
// messages (context.ts) are cut further, oldest first, until the system
// message, the messages and the reply's share (max_tokens) fit in
// context_tokens. Pure: the caller gives the counter.
import type { ContextMessage } from './provider.ts'
import { MESSAGE_OVERHEAD_TOKENS, REPLY_PRIMING_TOKENS, type TokenCounter } from './token-count.ts'

export interface ContextBudget {
  /** The model's window; undefined: nothing is cut. */
  contextTokens: number | undefined
  /** The reply's share of the window. */
  maxTokens: number
}

const cost = (counter: TokenCounter, content: string) =>
  counter.count(content) + MESSAGE_OVERHEAD_TOKENS

/**
 * The system message (when there is one) followed by the newest messages
 * that fit, oldest first. The newest message - the one the reply answers -
 * is always kept, even alone over the budget: a context without it could
 * only be answered wrongly, and the model server then says the input is too
 * long. Counting stops at the first message that does not fit, so a long
 * history costs no more than what is kept.
 */
export function fitContext(
  messages: readonly ContextMessage[],
  system: string | undefined,
  budget: ContextBudget,
  counter: TokenCounter,
): ContextMessage[] {
  const head: ContextMessage[] = system === undefined ? [] : [{ role: 'system', content: system }]
  if (budget.contextTokens === undefined) return [...head, ...messages]
  let left = budget.contextTokens - budget.maxTokens - REPLY_PRIMING_TOKENS
  if (system !== undefined) left -= cost(counter, system)
  let first = messages.length
  while (first > 0) {
    const message = messages[first - 1] as ContextMessage
    left -= cost(counter, message.content)
    if (left < 0 && first < messages.length) break
    first--
  }
  return [...head, ...messages.slice(first)]
}
