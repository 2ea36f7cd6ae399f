// Conversation management (CONTRACT §11): rename, archive and delete one
// conversation or all of a user's, search them, and rate replies. Every change
// drops the cached keys it makes stale (§4.7). Knows nothing of HTTP.
import { notFound } from '../../errors.ts'
import type { Cache } from '../../storage/cache.ts'
import { historyKey, listKey } from '../reads/cache-keys.ts'
import {
  archiveAllConversations,
  isOwnConversation,
  updateConversation,
} from '../sql/conversations-repository.ts'
import { type Feedback, rateReply } from '../sql/feedback-repository.ts'
import { searchConversations } from '../sql/search-repository.ts'
import { type DeleteDeps, deleteConversations } from './delete-conversations.ts'
import { snippetOf } from './snippet.ts'

export interface ConversationChange {
  title?: string
  isArchived?: boolean
  /** true deletes the conversation for good (`is_visible: false`). */
  delete?: boolean
}

export interface SearchItem {
  id: string
  title: string
  snippet: string
  updated_at: string
}

export type Management = ReturnType<typeof createManagement>

const missing = () => notFound('Conversation not found.')

export function createManagement(deps: DeleteDeps) {
  const { db } = deps

  async function drop(cache: Cache, ...keys: string[]) {
    await cache.del(...keys).catch((error) => deps.warn('could not invalidate cached reads', error))
  }

  return {
    /** Changes one of the user's conversations; `not_found` when it is missing or someone else's. */
    async update(userId: string, conversationId: string, change: ConversationChange) {
      if (change.delete) {
        const deleted = await deleteConversations(deps, userId, conversationId)
        if (deleted.length === 0) throw missing()
        return
      }
      const updated = await updateConversation(db, conversationId, userId, change)
      if (!updated) throw missing()
      // The list shows title and archive state; the history is dropped with a new title too.
      if (change.title === undefined) await drop(deps.cache, listKey(userId))
      else await drop(deps.cache, listKey(userId), historyKey(conversationId))
    },

    /** Deletes or archives all of the user's conversations. */
    async updateAll(userId: string, change: { isArchived?: true; delete?: boolean }) {
      if (change.delete) await deleteConversations(deps, userId, undefined)
      else if (change.isArchived) {
        await archiveAllConversations(db, userId)
        await drop(deps.cache, listKey(userId))
      }
    },

    /** The user's conversations containing `query`, newest update first. */
    async search(userId: string, query: string, limit: number): Promise<SearchItem[]> {
      const rows = await searchConversations(db, userId, query, limit)
      return rows.map((row) => ({
        id: row.id,
        title: row.title,
        snippet: snippetOf(row.messageText ?? row.title, query),
        updated_at: row.updatedAt.toISOString(),
      }))
    },

    /** Stores the user's rating of a reply, replacing an earlier one (no cached read shows it). */
    async rate(feedback: Feedback) {
      if (await rateReply(db, feedback)) return
      if (!(await isOwnConversation(db, feedback.conversationId, feedback.userId))) throw missing()
      throw notFound(`No reply with id "${feedback.messageId}" in this conversation.`)
    },
  }
}
