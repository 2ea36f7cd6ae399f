// The ModelCatalogue port (CONTRACT §15): the models this service answers
// with, by slug, each a ModelProvider with what the turn needs to build its
// context (window, reply share, system prompt, tokenizer). A turn asks the
// catalogue for the model its reply was accepted with; providers stay behind
// the ModelProvider port. Built from configuration in dependencies.ts.
import type { ModelProvider } from './provider.ts'
import type { TokenizerName } from './token-count.ts'

export interface CatalogueModel {
  /** What clients name it by; reported as `model_slug`. */
  slug: string
  title: string
  provider: ModelProvider
  /** Tokens kept free for the reply; what GET /backend-api/models reports. */
  maxTokens: number
  /** The model's window; undefined: the context is not cut by tokens. */
  contextTokens?: number
  /** The model's own system message, before the user's custom instructions. */
  systemPrompt?: string
  /** How its context is counted. */
  tokenizer: TokenizerName
  /** Whether a turn offers it tools (CONTRACT §21); unset: none. */
  tools?: boolean
  /** It sees images (CONTRACT §20): a send showing it one is accepted; absent, refused. */
  vision?: boolean
}

export interface ModelCatalogue {
  /** Every model, in configured order. */
  readonly models: readonly CatalogueModel[]
  /** The model of a send that names none (and of a conversation whose model is gone). */
  readonly defaultModel: CatalogueModel
  /** The model with this slug, if the catalogue has one. */
  get(slug: string): CatalogueModel | undefined
}

/** A catalogue of the models, the one marked default (else the first) as its default. */
export function createModelCatalogue(
  models: readonly CatalogueModel[],
  defaultSlug?: string,
): ModelCatalogue {
  const first = models[0]
  if (!first) throw new Error('createModelCatalogue: a catalogue needs a model')
  const bySlug = new Map(models.map((model) => [model.slug, model]))
  if (bySlug.size !== models.length) throw new Error('createModelCatalogue: slugs must be unique')
  const defaultModel = (defaultSlug === undefined ? undefined : bySlug.get(defaultSlug)) ?? first
  return { models, defaultModel, get: (slug) => bySlug.get(slug) }
}

/** The catalogue of one provider, as the service ran before catalogues (tests, benchmarks). */
export function singleModelCatalogue(provider: ModelProvider): ModelCatalogue {
  return createModelCatalogue([
    {
      slug: provider.slug,
      title: provider.slug,
      provider,
      maxTokens: 8191,
      tokenizer: 'estimate',
    },
  ])
}

/** The model for a stored slug: its own, or the default when the catalogue no longer has it. */
export const modelOf = (catalogue: ModelCatalogue, slug: string): CatalogueModel =>
  catalogue.get(slug) ?? catalogue.defaultModel
