// The title the first turn of a new conversation streams (CONTRACT §11), after
// its completion patch. A model that writes titles (the `openai` provider)
// names the conversation from its first exchange; otherwise, or when that
// fails, the title is the one stored when the conversation was created: the
// first user message cut to 80 characters. The stored title, the list and the
// streamed item agree.
import { titleFrom } from '../messages.ts'
import { modelOf } from '../model/catalogue.ts'
import type { ModelProvider } from '../model/provider.ts'
import { storableText } from '../model/storable-output.ts'
import { readNaming, storeTitle } from '../sql/title-repository.ts'
import type { QueuedTurn } from '../sql/turn-repository.ts'
import { invalidateReads, type TurnDeps } from './deps.ts'

/**
 * The title to stream at the end of `turn`, stored first; undefined when the
 * turn is not a conversation's first or the title could not be read. The model
 * is only asked after a reply that finished normally (a failed or stopped turn
 * must end at once). `storedTitle`, the title read as the reply was stored,
 * saves reading it again when the model is not asked.
 */
export async function firstTurnTitle(
  deps: TurnDeps,
  turn: QueuedTurn,
  reply: { text: string; askModel: boolean; storedTitle?: string },
): Promise<string | undefined> {
  if (!turn.metadata.first_turn) return undefined
  // The model that wrote the reply names the conversation.
  const { provider } = modelOf(deps.models, turn.metadata.model_slug)
  const asksModel = reply.askModel && provider.title !== undefined
  if (!asksModel && reply.storedTitle !== undefined) return reply.storedTitle
  try {
    const naming = await readNaming(deps.db, turn.conversationId)
    if (!naming) return undefined
    const written = reply.askModel
      ? await modelTitle(deps, provider, naming.firstUserText, reply.text)
      : ''
    if (written === '' || written === naming.title) return naming.title
    await storeTitle(deps.db, turn.conversationId, written)
    await invalidateReads(deps, turn.conversationId, turn.userId)
    return written
  } catch (error) {
    deps.warn('could not store the conversation title', error)
    return undefined
  }
}

/** The model's title cut to 80 characters, or '' when it writes none. */
async function modelTitle(
  deps: TurnDeps,
  provider: ModelProvider,
  userText: string,
  replyText: string,
): Promise<string> {
  if (!provider.title) return ''
  try {
    return titleFrom(storableText(await provider.title({ userText, replyText })))
  } catch (error) {
    deps.warn('the model wrote no title; naming the conversation after its first message', error)
    return ''
  }
}
