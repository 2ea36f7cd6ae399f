// What every route of the conversation API shares: the caller's claimed
// identity on reads, the path's conversation id, sending cached JSON as it is,
// and the identity parameters and bearer scheme the API document declares.
import { t } from 'elysia'
import { invalid } from '../errors.ts'
import { textResponse } from '../http/response-headers.ts'
import { open } from './schemas.ts'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** A JSON body that is already text (a cache hit), sent without re-encoding. */
export const json = (set: Parameters<typeof textResponse>[0], body: string) =>
  textResponse(set, body, 'application/json')

/** The reader's identity: X-User-Id, else the user_id query parameter (CONTRACT §2). */
export const claimedReader = (request: Request, queryUserId: string | undefined) =>
  request.headers.get('x-user-id') ?? queryUserId

/** The path's conversation id, lower-cased; 422 when it is not a UUID. */
export function conversationIdOf(params: { conversation_id: string }): string {
  if (!UUID.test(params.conversation_id))
    throw invalid('The path parameter "conversation_id" must be a UUID.')
  return params.conversation_id.toLowerCase()
}

const xUserId = t.Optional(
  t.String({
    description:
      'Development mode (no AUTH_JWT_SECRET nor AUTH_JWKS_URL): who the caller is, 1–128 characters. With token auth, when given, it must be the token’s user.',
  }),
)

/** The identity header every route reads; documented, and any other header is let through. */
export const IdentityHeaders = t.Object({ 'x-user-id': xUserId }, open)

/** A resume's headers: the resume token, and the identity header. */
export const ResumeHeaders = t.Object(
  {
    'x-conduit-token': t.Optional(
      t.String({
        description:
          'Required: the resume token of the turn (from its stream or stream_status). Missing or bad: 401.',
      }),
    ),
    'x-user-id': xUserId,
  },
  open,
)

/**
 * The bearer scheme of the API document (plugins/docs) on a route: required
 * with AUTH_JWT_SECRET or AUTH_JWKS_URL, absent in development mode, hence the empty alternative.
 */
const security: Record<string, string[]>[] = [{ bearerAuth: [] }, {}]
export const bearerAuth = { security }
