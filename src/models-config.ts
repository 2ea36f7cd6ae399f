// The model catalogue as configured (CONTRACT §15): MODELS (a JSON array) or
// MODELS_FILE (a JSON file holding one), each entry checked against a TypeBox
// schema, so a bad entry stops the process with one line naming it
// (`MODELS[2].provider must be one of local, openai`). Unset, the single-model
// variables (MODEL_PROVIDER, MODEL, OPENAI_*) define the one model, as before.
// API keys are never written in an entry: `api_key_env` names the variable
// that holds one, which is read here and never echoed. Whether an `openai`
// model takes `reasoning_effort` is the entry's `reasoning`, else guessed from
// its name (reasoning-models.ts). Whether it sees images is the entry's
// `vision` (CONTRACT §20), false unless set.
//
// OpenAI's own API refuses every request without a key, so an `openai` model
// served from api.openai.com without one stops the process at startup; any
// other server (vLLM, Ollama, llama.cpp) may need none, so there a missing key
// is only worth one warning line at startup (keylessModels).
import { type TSchema, Type } from '@sinclair/typebox'
import { Value, ValueErrorType } from '@sinclair/typebox/value'
import { MODEL_PROVIDERS, type ModelProviderName } from './config-schema.ts'
import { readJsonSetting } from './json-setting.ts'
import { isReasoningModel } from './reasoning-models.ts'

/** A configured model, as the catalogue (src/conversation/model/catalogue.ts) is built from it. */
export interface ModelConfig {
  /** What clients name it by (`model` in a send, `model_slug` in replies). */
  slug: string
  title: string
  provider: ModelProviderName
  /** The name the provider knows it by (sent as `model` to an OpenAI-compatible server). */
  model: string
  /** For `openai`: the server's base URL, without a trailing slash. */
  baseUrl: string
  /** For `openai`: the key read from the variable the entry names; never shown. */
  apiKey: string | undefined
  /** Tokens kept free for the reply, and what GET /backend-api/models reports. */
  maxTokens: number
  /** For `openai`: the reply's limit sent upstream, only when the entry set `max_tokens`. */
  upstreamMaxTokens: number | undefined
  /** For `openai`: whether the model takes `reasoning_effort` (reasoning-models.ts). */
  reasoning: boolean
  /** Whether the model is offered tools (CONTRACT §21): only an `openai` model can call them. */
  tools: boolean
  /** The model's window; the context is cut to fit it minus maxTokens. Unset: no cut by tokens. */
  contextTokens: number | undefined
  /** The model's own system message, before the user's custom instructions. */
  systemPrompt: string | undefined
  /** The model sees images (CONTRACT §20); false: a send with images to it is a 422. */
  vision: boolean
  /** The catalogue's default: exactly one entry is. */
  isDefault: boolean
}

/** What GET /models reports when nothing says how many tokens a model takes (chatgpt.com's value). */
export const DEFAULT_MAX_TOKENS = 8191
const MAX_MODELS = 64
const MAX_SYSTEM_PROMPT_CHARS = 20_000
export const SLUG_PATTERN = '^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$'

/**
 * The keywords each field adds: the end of "… must be …", and whether the
 * value given may be shown. Only a closed set of words may: a key pasted
 * into any text field by mistake must never reach the log.
 */
const field = <T extends TSchema>(schema: T, expected: string, showGiven = false): T =>
  Object.assign(schema, { expected, showGiven })

const Entry = Type.Object(
  {
    slug: field(
      Type.String({ pattern: SLUG_PATTERN }),
      'up to 128 letters, digits and . _ : / @ + - (starting with a letter or digit)',
    ),
    title: Type.Optional(
      field(Type.String({ minLength: 1, maxLength: 128 }), 'a text of 1 to 128 characters'),
    ),
    provider: field(
      Type.Union(MODEL_PROVIDERS.map((name) => Type.Literal(name))),
      `one of ${MODEL_PROVIDERS.join(', ')}`,
      true,
    ),
    model: Type.Optional(
      field(Type.String({ minLength: 1, maxLength: 256 }), 'a text of 1 to 256 characters'),
    ),
    base_url: Type.Optional(
      field(Type.String({ format: 'conduit-http-url' }), 'an http:// or https:// URL'),
    ),
    api_key_env: Type.Optional(
      field(
        Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$' }),
        'the name of an environment variable (letters, digits, _)',
      ),
    ),
    max_tokens: Type.Optional(
      field(Type.Integer({ minimum: 1, maximum: 10_000_000 }), 'a whole number from 1 to 10000000'),
    ),
    context_tokens: Type.Optional(
      field(
        Type.Integer({ minimum: 2, maximum: 100_000_000 }),
        'a whole number from 2 to 100000000',
      ),
    ),
    system_prompt: Type.Optional(
      field(
        Type.String({ maxLength: MAX_SYSTEM_PROMPT_CHARS }),
        `a text of at most ${MAX_SYSTEM_PROMPT_CHARS} characters`,
      ),
    ),
    reasoning: Type.Optional(field(Type.Boolean(), 'true or false')),
    tools: Type.Optional(field(Type.Boolean(), 'true or false')),
    vision: Type.Optional(field(Type.Boolean(), 'true or false')),
    default: Type.Optional(field(Type.Boolean(), 'true or false')),
  },
  { additionalProperties: false },
)
type Entry = typeof Entry.static

const Catalogue = Type.Array(Entry, { minItems: 1, maxItems: MAX_MODELS })

/** What the single-model variables say (see config-schema.ts). */
export interface SingleModelVariables {
  provider: ModelProviderName
  model: string
  openaiBaseUrl: string
  openaiApiKey: string | undefined
}

type Env = Record<string, string | undefined>

/** Thrown with the one line the entry point prints. */
export class ModelsConfigError extends Error {}

/** `[2].provider` from the error path `/2/provider`. */
function entryPath(path: string): string {
  const [index, ...rest] = path.split('/').slice(1)
  return `[${index}]${rest.map((part) => `.${part}`).join('')}`
}

/** One line about the first bad entry, never showing a secret. */
function firstError(source: string, value: unknown): string | undefined {
  const error = Value.Errors(Catalogue, value).First()
  if (error === undefined) return undefined
  if (error.path === '')
    return `${source} must be a JSON array of 1 to ${MAX_MODELS} models ({"slug","provider",…})`
  const where = `${source}${entryPath(error.path)}`
  if (error.path.split('/').length === 2)
    return `${where} must be an object ({"slug","provider",…})`
  if (error.type === ValueErrorType.ObjectAdditionalProperties) {
    const fields = `fields: ${Object.keys(Entry.properties).join(', ')}`
    const name = error.path.split('/')[2] ?? ''
    // A name is shown only when it looks like one (a misspelt field), never a pasted key.
    return /^[A-Za-z_]{1,32}$/.test(name)
      ? `${where} is not a field of a model (${fields})`
      : `${source}[${error.path.split('/')[1]}] has a field that is not a field of a model (${fields})`
  }
  if (error.type === ValueErrorType.ObjectRequiredProperty) return `${where} is required`
  const schema = error.schema as { expected?: string; showGiven?: boolean }
  const given =
    !schema.showGiven || typeof error.value !== 'string' || error.value.length > 64
      ? ''
      : `; got ${JSON.stringify(error.value)}`
  return `${where} must be ${schema.expected ?? 'valid'}${given}`
}

/** The raw catalogue text and where it came from, or undefined when neither variable is set. */
/** Whether a base URL is OpenAI's own API (which needs a key; a self-hosted server may not). */
export function isOpenAiApi(baseUrl: string): boolean {
  try {
    return new URL(baseUrl).hostname.toLowerCase().replace(/\.$/, '') === 'api.openai.com'
  } catch {
    return false
  }
}

/** The `openai` models configured without a key: served elsewhere than OpenAI, so allowed. */
export function keylessModels(models: readonly ModelConfig[]): string[] {
  return models
    .filter((model) => model.provider === 'openai' && model.apiKey === undefined)
    .map((model) => model.slug)
}

/** Rules across entries and with the environment: unique slugs, one default, keys present. */
function checkEntries(source: string, entries: Entry[], env: Env, defaultBaseUrl: string): void {
  const seen = new Set<string>()
  let firstDefault: number | undefined
  entries.forEach((entry, index) => {
    const where = `${source}[${index}]`
    if (entry.slug === 'auto')
      throw new ModelsConfigError(
        `${where}.slug must not be "auto": a send's "auto" means the default`,
      )
    if (seen.has(entry.slug))
      throw new ModelsConfigError(`${where}.slug repeats "${entry.slug}": slugs must be unique`)
    seen.add(entry.slug)
    if (entry.default && firstDefault !== undefined)
      throw new ModelsConfigError(
        `${where}.default must not be true: ${source}[${firstDefault}] is the default already`,
      )
    if (entry.default) firstDefault = index
    if (entry.provider === 'local')
      for (const name of ['base_url', 'api_key_env', 'reasoning', 'tools'] as const)
        if (entry[name] !== undefined)
          throw new ModelsConfigError(`${where}.${name} is only for provider openai`)
    if (
      entry.max_tokens !== undefined &&
      entry.context_tokens !== undefined &&
      entry.max_tokens >= entry.context_tokens
    )
      throw new ModelsConfigError(
        `${where}.max_tokens must be less than its context_tokens (the reply's share of the window)`,
      )
    if (entry.api_key_env !== undefined && !env[entry.api_key_env])
      throw new ModelsConfigError(
        `${where}.api_key_env names the variable ${entry.api_key_env}, which is not set`,
      )
    if (
      entry.provider === 'openai' &&
      entry.api_key_env === undefined &&
      isOpenAiApi(entry.base_url ?? defaultBaseUrl)
    )
      throw new ModelsConfigError(
        `${where}.api_key_env is required: the model is served by api.openai.com, which needs an API key`,
      )
  })
}

/** Tokens kept for the reply: as configured, else a quarter of the window (at most 8191), else 8191. */
function replyTokens(entry: Entry): number {
  if (entry.max_tokens !== undefined) return entry.max_tokens
  if (entry.context_tokens === undefined) return DEFAULT_MAX_TOKENS
  return Math.min(DEFAULT_MAX_TOKENS, Math.max(1, Math.floor(entry.context_tokens / 4)))
}

/**
 * The configured models, the default first-marked (else the first entry).
 * Throws ModelsConfigError with one line naming the bad entry.
 */
export function readModels(env: Env, single: SingleModelVariables): ModelConfig[] {
  const raw = readJsonSetting(
    env,
    'MODELS',
    'array of models',
    (message) => new ModelsConfigError(message),
  )
  if (
    !raw &&
    single.provider === 'openai' &&
    !single.openaiApiKey &&
    isOpenAiApi(single.openaiBaseUrl)
  )
    throw new ModelsConfigError(
      'OPENAI_API_KEY must be set for MODEL_PROVIDER=openai at api.openai.com (OPENAI_BASE_URL); a self-hosted server may go without one',
    )
  if (!raw)
    return [
      {
        slug: single.model,
        title: single.model,
        provider: single.provider,
        model: single.model,
        baseUrl: single.openaiBaseUrl,
        apiKey: single.provider === 'openai' ? single.openaiApiKey : undefined,
        maxTokens: DEFAULT_MAX_TOKENS,
        upstreamMaxTokens: undefined,
        reasoning: single.provider === 'openai' && isReasoningModel(single.model),
        tools: false,
        contextTokens: undefined,
        systemPrompt: undefined,
        vision: false,
        isDefault: true,
      },
    ]
  const problem = firstError(raw.source, raw.value)
  if (problem !== undefined) throw new ModelsConfigError(problem)
  const entries = raw.value as Entry[]
  checkEntries(raw.source, entries, env, single.openaiBaseUrl)
  const defaultIndex = Math.max(
    0,
    entries.findIndex((entry) => entry.default === true),
  )
  return entries.map((entry, index) => ({
    slug: entry.slug,
    title: entry.title ?? entry.slug,
    provider: entry.provider,
    model: entry.model ?? entry.slug,
    baseUrl: entry.base_url?.replace(/\/+$/, '') ?? single.openaiBaseUrl,
    apiKey: entry.api_key_env === undefined ? undefined : env[entry.api_key_env],
    maxTokens: replyTokens(entry),
    upstreamMaxTokens: entry.max_tokens,
    reasoning:
      entry.provider === 'openai' &&
      (entry.reasoning ?? isReasoningModel(entry.model ?? entry.slug)),
    tools: entry.tools === true,
    contextTokens: entry.context_tokens,
    systemPrompt: entry.system_prompt === '' ? undefined : entry.system_prompt,
    vision: entry.vision ?? false,
    isDefault: index === defaultIndex,
  }))
}
