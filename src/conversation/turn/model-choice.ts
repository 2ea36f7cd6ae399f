// Which model answers a send (CONTRACT §15): the one its `model` names by
// slug; for `"auto"`, an empty or absent `model`, the conversation's model,
// else the catalogue's default. A slug the catalogue does not have is a 422
// naming it, found before anything is stored. Only a multi-model catalogue
// reads the conversation's model: with one model every answer is the same.
import { invalid } from '../../errors.ts'
import type { Db } from '../../storage/db.ts'
import type { CatalogueModel, ModelCatalogue } from '../model/catalogue.ts'
import { conversationModelSlug } from '../sql/conversation-model-repository.ts'

export interface ModelChoice {
  model: CatalogueModel
  /** The send named it (not "auto"). */
  named: boolean
}

/** What a send's `model` asks for: a slug, or nothing in particular. */
const asksFor = (requested: string | null | undefined) =>
  requested === undefined || requested === null || requested === '' || requested === 'auto'
    ? undefined
    : requested

export async function chooseModel(
  deps: { db: Db; models: ModelCatalogue },
  send: {
    requested: string | null | undefined
    conversationId: string | undefined
    userId: string
  },
): Promise<ModelChoice> {
  const { models } = deps
  const slug = asksFor(send.requested)
  if (slug !== undefined) {
    const model = models.get(slug)
    if (!model)
      throw invalid(
        `The field "model" names ${JSON.stringify(slug)}, which is not a model of this service; GET /backend-api/models lists them.`,
        'unknown_model',
      )
    return { model, named: true }
  }
  if (send.conversationId === undefined || models.models.length === 1)
    return { model: models.defaultModel, named: false }
  const stored = await conversationModelSlug(deps.db, send.conversationId, send.userId)
  return {
    model: (stored === undefined ? undefined : models.get(stored)) ?? models.defaultModel,
    named: false,
  }
}
