// The conversation management routes (CONTRACT §11), mounted by routes.ts
// under /backend-api: rename, archive and delete (one or all), search and
// reply feedback (the model list is models-routes.ts). They validate, resolve the
// caller as reads do (X-User-Id, else the user_id query parameter, else the
// body's user_id; the bearer token with JWT auth), and hand the work to the
// management service.
import { Elysia } from 'elysia'
import type { Authenticator } from '../../http/auth.ts'
import { wholeNumber } from '../reads/query-params.ts'
import { bearerAuth, claimedReader, conversationIdOf, IdentityHeaders } from '../route-helpers.ts'
import { errorResponses } from '../schemas.ts'
import type { Management } from './management.ts'
import {
  ConversationPatch,
  ConversationsPatch,
  FeedbackBody,
  requireSomeChange,
  SearchQuery,
  SearchResult,
  Success,
} from './management-schemas.ts'

export interface ManagementRoutesDeps {
  manage: Management
  auth: Authenticator
}

const success = { success: true as const }
const tags = ['conversation']

export function managementRoutes({ manage, auth }: ManagementRoutesDeps) {
  /** The caller: header, then query, then the body's user_id (as a send names it). */
  const callerOf = (request: Request, query: { user_id?: string }, bodyUserId?: string) =>
    auth.userOf(request, claimedReader(request, query.user_id) ?? bodyUserId)

  return new Elysia({ name: 'conversation-management' })
    .patch(
      '/conversation/:conversation_id',
      async ({ params, query, body, request }) => {
        const conversationId = conversationIdOf(params)
        requireSomeChange(body, ['title', 'is_archived', 'is_visible'])
        const userId = await callerOf(request, query, body.user_id)
        await manage.update(userId, conversationId, {
          title: body.title,
          isArchived: body.is_archived,
          delete: body.is_visible === false,
        })
        return success
      },
      {
        body: ConversationPatch,
        headers: IdentityHeaders,
        response: { 200: Success, ...errorResponses(401, 403, 404, 422) },
        detail: {
          ...bearerAuth,
          tags,
          summary: 'Rename, archive or unarchive, or delete (is_visible: false) a conversation',
          description:
            'A delete stops a reply streaming in the conversation first, then removes the conversation, its messages, cached reads and resumable streams for good.',
        },
      },
    )
    .patch(
      '/conversations',
      async ({ query, body, request }) => {
        requireSomeChange(body, ['is_archived', 'is_visible'])
        const userId = await callerOf(request, query, body.user_id)
        await manage.updateAll(userId, {
          isArchived: body.is_archived,
          delete: body.is_visible === false,
        })
        return success
      },
      {
        body: ConversationsPatch,
        headers: IdentityHeaders,
        response: { 200: Success, ...errorResponses(401, 403, 422) },
        detail: {
          ...bearerAuth,
          tags,
          summary:
            "Archive (is_archived: true) or delete (is_visible: false) all the user's conversations",
        },
      },
    )
    .get(
      '/conversations/search',
      async ({ query, request }) => {
        const limit = wholeNumber('limit', query.limit, 20, 1, 50)
        const userId = await callerOf(request, query)
        return { items: await manage.search(userId, query.query, limit) }
      },
      {
        query: SearchQuery,
        headers: IdentityHeaders,
        response: { 200: SearchResult, ...errorResponses(401, 403, 422) },
        detail: {
          ...bearerAuth,
          tags,
          summary: "Search the user's conversation titles and messages, newest update first",
        },
      },
    )
    .post(
      '/conversation/message_feedback',
      async ({ query, body, request }) => {
        const userId = await callerOf(request, query, body.user_id)
        await manage.rate({
          userId,
          conversationId: body.conversation_id.toLowerCase(),
          messageId: body.message_id,
          rating: body.rating,
          text: body.text,
        })
        return success
      },
      {
        body: FeedbackBody,
        headers: IdentityHeaders,
        response: { 200: Success, ...errorResponses(401, 403, 404, 422) },
        detail: {
          ...bearerAuth,
          tags,
          summary: 'Rate a reply; a new rating replaces the last one',
        },
      },
    )
}
