// Shared links (CONTRACT §23): what a user does with them (make one for a
// finished message of their conversation, retitle it, make it private,
// delete it) and what anyone with the link reads: the branch from the top of
// the tree down to the shared message, as the conversation detail (§17)
// shows a conversation. The shared object names the link, not the
// conversation (its `id` and `conversation_id` are the share id), carries
// no user id, and leaves out what only the owner should see: hidden
// messages and the custom instructions a message's metadata may hold.
import { conflict, notFound } from '../../errors.ts'
import type { Queryable } from '../../storage/db.ts'
import { conversationObject } from '../tree/tree-detail.ts'
import {
  deleteShare,
  insertShare,
  readSharedBranch,
  type ShareRow,
  shareRefusal,
  updateShare,
} from './share-repository.ts'

export interface SharesDeps {
  db: Queryable
  newId: () => string
  /** The model named when no shared reply names one. */
  modelSlug: string
}

/** Metadata a shared message never shows: the owner's custom instructions. */
const PRIVATE_METADATA = ['user_context_message_data'] as const

const NO_SHARE = 'No such shared conversation.'

/** chatgpt.com's fields of a link, besides its id and URL path. */
export function shareFields(share: ShareRow) {
  return {
    share_id: share.id,
    title: share.title,
    is_public: share.isPublic,
    is_visible: true,
    is_anonymous: true,
    highlighted_message_id: null,
    current_node_id: share.currentNodeId,
    conversation_id: share.conversationId,
    create_time: share.createdAt.getTime() / 1000,
    update_time: share.updatedAt.getTime() / 1000,
    moderation_state: {
      has_been_moderated: false,
      has_been_blocked: false,
      has_been_accepted: false,
      has_been_auto_blocked: false,
      has_been_auto_moderated: false,
    },
  }
}

export function createShares({ db, newId, modelSlug }: SharesDeps) {
  return {
    /** A link to the branch up to `nodeId`; the one already made for it when there is one. */
    async create(userId: string, conversationId: string, nodeId: string) {
      const made = await insertShare(db, { id: newId(), conversationId, nodeId, userId })
      if (made) return { share: made, alreadyExists: false }
      const refusal = await shareRefusal(db, conversationId, nodeId, userId)
      if (refusal && 'existing' in refusal) return { share: refusal.existing, alreadyExists: true }
      if (refusal)
        throw conflict('The reply is still being written: share it once it has finished.')
      throw notFound('No such conversation, or no such message in it.')
    },

    /** Retitles the user's link or makes it public or private; 404 when it is not the user's. */
    async update(userId: string, shareId: string, change: { title?: string; isPublic?: boolean }) {
      const share = await updateShare(db, shareId, userId, change)
      if (!share) throw notFound(NO_SHARE)
      return share
    },

    async remove(userId: string, shareId: string): Promise<void> {
      if (!(await deleteShare(db, shareId, userId))) throw notFound(NO_SHARE)
    },

    /** What anyone with the link reads; 404 when it is missing, private, or its conversation is gone. */
    async read(shareId: string) {
      const shared = await readSharedBranch(db, shareId)
      if (!shared || shared.rows.length === 0) throw notFound(NO_SHARE)
      const { share, rows } = shared
      const rowsShown = rows.map((row) => ({ ...row, metadata: withoutPrivate(row.metadata) }))
      const detail = conversationObject(
        {
          id: share.id,
          title: share.title,
          createdAt: shared.conversationCreatedAt,
          updatedAt: share.updatedAt,
          isArchived: false,
          currentNode: rowsShown.at(-1)?.id ?? null,
          defaultModelSlug: shared.defaultModelSlug,
        },
        rowsShown,
        modelSlug,
      )
      return {
        ...detail,
        share_id: share.id,
        is_public: true as const,
        moderation_state: shareFields(share).moderation_state,
      }
    },
  }
}

export type Shares = ReturnType<typeof createShares>
export type SharedConversation = Awaited<ReturnType<Shares['read']>>

function withoutPrivate(metadata: Record<string, unknown>): Record<string, unknown> {
  const shown = { ...metadata }
  for (const key of PRIVATE_METADATA) delete shown[key]
  return shown
}
