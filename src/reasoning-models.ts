// Which OpenAI-compatible models take a reasoning effort (CONTRACT §15): a
// send's `thinking_effort` / `reasoning_effort` reaches only those, since
// OpenAI refuses `reasoning_effort` for any other model (a 400 would fail the
// reply). A catalogue entry says so with `reasoning`; without it, and for the
// single-model variables, the model's name decides: OpenAI's o-series and
// GPT-5 family reason, other names are taken not to. It is part of reading
// the configuration (models-config.ts), so it sits beside it: the providers
// only receive the answer.

/** o1, o3-mini, o4-mini-high, gpt-5, gpt-5.1-codex …, with or without a provider prefix (`openai/o3`). */
const REASONING_NAME = /^(?:[\w.-]+\/)?(?:o\d+(?:$|[-.])|gpt-5(?:$|[-.]))/i

/** Whether a model by this name takes `reasoning_effort`, when nothing else says. */
export function isReasoningModel(name: string): boolean {
  return REASONING_NAME.test(name)
}
