// How hard a model should think (CONTRACT §15): chatgpt.com's clients send
// `thinking_effort` on its ladder (`min`, `standard`, `extended`, `max`),
// others OpenAI's `reasoning_effort` (`none`, `minimal`, `low`, `medium`,
// `high`, `xhigh`). Both become OpenAI's word, which the `openai` provider
// passes on as `reasoning_effort`; the local model ignores it. A word known to
// neither is dropped rather than refused: a newer client's step must not make
// a send fail, nor reach an upstream that would refuse it.

const OPENAI_EFFORTS = new Set(['none', 'minimal', 'low', 'medium', 'high', 'xhigh'])

/** chatgpt.com's ladder, step by step onto OpenAI's (`max` has no higher step there). */
const CHATGPT_LADDER = new Map([
  ['min', 'low'],
  ['standard', 'medium'],
  ['extended', 'high'],
  ['max', 'high'],
])

/** OpenAI's effort for what a send asked, or undefined when it asked none this service knows. */
export function reasoningEffortOf(
  thinkingEffort: string | null | undefined,
  reasoningEffort: string | null | undefined,
): string | undefined {
  for (const given of [reasoningEffort, thinkingEffort]) {
    if (typeof given !== 'string') continue
    const word = given.trim().toLowerCase()
    if (OPENAI_EFFORTS.has(word)) return word
    const step = CHATGPT_LADDER.get(word)
    if (step !== undefined) return step
  }
  return undefined
}
