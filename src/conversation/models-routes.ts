// GET /backend-api/models (CONTRACT §9, §15): the model catalogue in
// chatgpt.com's shape, which its clients read: `models` (slug, title,
// max_tokens and the fields chatgpt.com always sends) and `categories`, whose
// `default_model` gpt4free takes as its default (it reads the last category,
// so there is one, holding every model), and `default_model_slug`, which
// newer clients read. The answer never changes while the process runs: it is
// built once.
import { Elysia, t } from 'elysia'
import type { Authenticator } from '../http/auth.ts'
import type { ModelCatalogue } from './model/catalogue.ts'
import { bearerAuth, IdentityHeaders } from './route-helpers.ts'
import { errorResponses, open } from './schemas.ts'

export const ModelList = t.Object(
  {
    models: t.Array(
      t.Object({ slug: t.String(), title: t.String(), max_tokens: t.Integer() }, open),
    ),
    categories: t.Array(
      t.Object(
        {
          category: t.String(),
          human_category_name: t.String(),
          default_model: t.String(),
        },
        open,
      ),
    ),
    default_model_slug: t.String(),
  },
  open,
)

/** The body of GET /models for a catalogue. */
export function modelList(catalogue: ModelCatalogue) {
  const slugs = catalogue.models.map((model) => model.slug)
  return {
    models: catalogue.models.map((model) => ({
      slug: model.slug,
      title: model.title,
      description: '',
      max_tokens: model.maxTokens,
      tags: [] as string[],
      capabilities: {},
      product_features: {},
      enabled_tools: [] as string[],
    })),
    categories: [
      {
        category: 'conduit',
        human_category_name: 'Conduit',
        human_category_short_name: 'Conduit',
        subscription_level: 'free',
        default_model: catalogue.defaultModel.slug,
        supported_models: slugs,
        browsing_model: null,
        code_interpreter_model: null,
        plugins_model: null,
      },
    ],
    default_model_slug: catalogue.defaultModel.slug,
  }
}

export function modelsRoutes(deps: { models: ModelCatalogue; auth: Authenticator }) {
  const { auth } = deps
  const body = modelList(deps.models)
  return new Elysia({ name: 'models' }).get(
    '/models',
    async ({ request }) => {
      // With JWT auth a token is required, as on every /backend-api route.
      await auth.optionalUserOf(request, request.headers.get('x-user-id') ?? undefined)
      return body
    },
    {
      headers: IdentityHeaders,
      response: { 200: ModelList, ...errorResponses(401, 403) },
      detail: {
        ...bearerAuth,
        tags: ['conversation'],
        summary: 'The models a send may name, and the default one',
      },
    },
  )
}
