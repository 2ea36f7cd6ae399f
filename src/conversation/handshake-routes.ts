// chatgpt.com's handshake before a send (CONTRACT §17), mounted by routes.ts
// under /backend-api: deployed clients (gpt4free, chat2api) call POST
// /f/conversation/prepare and POST /sentinel/chat-requirements (some also its
// /prepare and /finalize) before every send, and stop when those fail. This
// service requires no proof of work nor turnstile, so they answer that nothing
// is required, with tokens the send does not check. The caller is named as
// for a send: the body's user_id, else X-User-Id (the bearer token with JWT auth).
import { randomBytes } from 'node:crypto'
import { Elysia, t } from 'elysia'
import type { Authenticator } from '../http/auth.ts'
import { bearerAuth, IdentityHeaders } from './route-helpers.ts'
import { bodyUserId, errorResponses, open } from './schemas.ts'

export interface HandshakeRoutesDeps {
  auth: Authenticator
  /** A conduit token for the user (conduit-token.ts). */
  conduitToken: (userId: string) => string
}

const HandshakeBody = t.Object(
  {
    user_id: bodyUserId('Development mode: the caller, if no X-User-Id.'),
  },
  { ...open, description: 'What chatgpt.com clients send here; only `user_id` is read.' },
)

const PrepareResult = t.Object({
  status: t.Literal('ok'),
  conduit_token: t.String({ description: 'An HS256 JWT naming the user; sends do not check it.' }),
})

const nothingRequired = t.Object({ required: t.Literal(false) })

const Requirements = t.Object({
  persona: t.Literal('chatgpt-paid'),
  token: t.String({ description: 'Opaque; sends do not check it.' }),
  prepare_token: t.Optional(t.String({ description: 'From /prepare: the same opaque token.' })),
  proofofwork: nothingRequired,
  turnstile: nothingRequired,
})

/** An opaque token, as chatgpt.com's sentinel hands out. */
const opaqueToken = () => `conduit-${randomBytes(24).toString('base64url')}`

const tags = ['conversation']

export function handshakeRoutes({ auth, conduitToken }: HandshakeRoutesDeps) {
  const callerOf = (request: Request, body: { user_id?: string }) =>
    auth.userOf(request, body.user_id ?? request.headers.get('x-user-id') ?? undefined)

  const requirements =
    (prepare: boolean) => async (context: { request: Request; body: { user_id?: string } }) => {
      await callerOf(context.request, context.body)
      const token = opaqueToken()
      return {
        persona: 'chatgpt-paid' as const,
        token,
        ...(prepare ? { prepare_token: token } : {}),
        proofofwork: { required: false as const },
        turnstile: { required: false as const },
      }
    }
  const requirementsRoute = (summary: string) => ({
    body: HandshakeBody,
    headers: IdentityHeaders,
    response: { 200: Requirements, ...errorResponses(401, 403, 422) },
    detail: { ...bearerAuth, tags, summary },
  })

  return new Elysia({ name: 'conversation-handshake' })
    .post(
      '/f/conversation/prepare',
      async ({ request, body }) => ({
        status: 'ok' as const,
        conduit_token: conduitToken(await callerOf(request, body)),
      }),
      {
        body: HandshakeBody,
        headers: IdentityHeaders,
        response: { 200: PrepareResult, ...errorResponses(401, 403, 422) },
        detail: {
          ...bearerAuth,
          tags,
          summary: 'chatgpt.com’s prepare before a send: a conduit token, nothing else to do',
        },
      },
    )
    .post(
      '/sentinel/chat-requirements',
      requirements(false),
      requirementsRoute('chatgpt.com’s chat requirements: nothing is required'),
    )
    .post(
      '/sentinel/chat-requirements/prepare',
      requirements(true),
      requirementsRoute('chatgpt.com’s chat requirements (prepare step): nothing is required'),
    )
    .post(
      '/sentinel/chat-requirements/finalize',
      requirements(false),
      requirementsRoute('chatgpt.com’s chat requirements (finalize step): nothing is required'),
    )
}
