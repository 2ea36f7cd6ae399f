// The shared-link routes (CONTRACT §23), mounted by app.ts beside the
// conversation API: the owner's POST /backend-api/share/create, PATCH and
// DELETE /backend-api/share/{id} (identity as reads resolve it), and the
// reader's GET /backend-api/share/{id} (JSON) and GET /share/{id} (the page),
// which need no identity at all.
import { Elysia } from 'elysia'
import { DomainError, invalid } from '../../errors.ts'
import type { Authenticator } from '../../http/auth.ts'
import { requireSomeChange, Success } from '../management/management-schemas.ts'
import { bearerAuth, claimedReader, IdentityHeaders } from '../route-helpers.ts'
import { errorResponseDocs, errorResponses } from '../schemas.ts'
import { NOT_SHARED_PAGE, SHARE_PAGE_CSP, sharePage } from './share-page.ts'
import type { ShareRow } from './share-repository.ts'
import { ShareCreateBody, ShareInfo, SharePatch } from './share-schemas.ts'
import { type Shares, shareFields } from './shares.ts'

export interface ShareRoutesDeps {
  shares: Shares
  auth: Authenticator
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const tags = ['share']

/** The path's share id, lower-cased; 422 when it is not a UUID. */
function shareIdOf(params: { share_id: string }): string {
  if (!UUID.test(params.share_id)) throw invalid('The path parameter "share_id" must be a UUID.')
  return params.share_id.toLowerCase()
}

/** The link as its owner sees it, with the page's address on the host the request came to. */
const infoOf = (request: Request, share: ShareRow) => ({
  ...shareFields(share),
  share_url: new URL(`/share/${share.id}`, request.url).href,
})

export function shareRoutes({ shares, auth }: ShareRoutesDeps) {
  const callerOf = (request: Request, query: { user_id?: string }, bodyUserId?: string) =>
    auth.userOf(request, claimedReader(request, query.user_id) ?? bodyUserId)

  return new Elysia({ name: 'shares' })
    .post(
      '/backend-api/share/create',
      async ({ query, body, request }) => {
        const userId = await callerOf(request, query, body.user_id)
        const { share, alreadyExists } = await shares.create(
          userId,
          body.conversation_id.toLowerCase(),
          body.current_node_id,
        )
        return { ...infoOf(request, share), already_exists: alreadyExists }
      },
      {
        body: ShareCreateBody,
        headers: IdentityHeaders,
        response: { 200: ShareInfo, ...errorResponses(401, 403, 404, 409, 422) },
        detail: {
          ...bearerAuth,
          tags,
          summary: "Share a conversation's branch up to a message, read-only, by link",
          description:
            'The link shows the branch from the first message down to current_node_id as it is now; messages added later are not shared. Sharing the same message again answers the same link (already_exists: true).',
        },
      },
    )
    .patch(
      '/backend-api/share/:share_id',
      async ({ params, query, body, request }) => {
        const shareId = shareIdOf(params)
        requireSomeChange(body, ['title', 'is_public'])
        const userId = await callerOf(request, query, body.user_id)
        const share = await shares.update(userId, shareId, {
          title: body.title,
          isPublic: body.is_public,
        })
        return infoOf(request, share)
      },
      {
        body: SharePatch,
        headers: IdentityHeaders,
        response: { 200: ShareInfo, ...errorResponses(401, 403, 404, 422) },
        detail: { ...bearerAuth, tags, summary: 'Retitle a link, or make it private or public' },
      },
    )
    .delete(
      '/backend-api/share/:share_id',
      async ({ params, query, request }) => {
        const shareId = shareIdOf(params)
        const userId = await callerOf(request, query)
        await shares.remove(userId, shareId)
        return { success: true as const }
      },
      {
        headers: IdentityHeaders,
        response: { 200: Success, ...errorResponses(401, 403, 404, 422) },
        detail: {
          ...bearerAuth,
          tags,
          summary: 'Delete a link for good (its page then answers 404)',
        },
      },
    )
    .get('/backend-api/share/:share_id', async ({ params }) => shares.read(shareIdOf(params)), {
      detail: {
        tags,
        summary: 'A shared conversation, read-only, for anyone with the link',
        description:
          'The conversation detail (as GET /backend-api/conversation/{id}) of the shared branch only, with the share id as its id and no user id. Needs no identity. 404 when the link is missing, private, or its conversation deleted.',
        responses: {
          200: { description: 'The shared conversation.' },
          ...errorResponseDocs(404, 422),
        },
      },
    })
    .get(
      '/share/:share_id',
      async ({ params }) => {
        if (!UUID.test(params.share_id)) return htmlPage(NOT_SHARED_PAGE, 404)
        try {
          return htmlPage(sharePage(await shares.read(params.share_id.toLowerCase())), 200)
        } catch (error) {
          if (error instanceof DomainError && error.kind === 'not_found')
            return htmlPage(NOT_SHARED_PAGE, 404)
          throw error
        }
      },
      { detail: { tags, summary: 'The read-only page of a shared conversation (HTML)' } },
    )
}

/** The page as HTML that may run no script and is not kept by caches (a link can be withdrawn). */
const htmlPage = (body: string, status: number) =>
  new Response(body, {
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': SHARE_PAGE_CSP,
      'cache-control': 'no-store',
    },
  })
