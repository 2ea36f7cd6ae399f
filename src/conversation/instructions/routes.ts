// GET / POST /backend-api/user_system_messages (CONTRACT §16): a user's custom
// instructions as chatgpt.com's `user_system_message_detail`. The caller is
// resolved as on the management routes (X-User-Id, else the user_id query
// parameter, else the body's user_id; the bearer token with JWT auth). A POST
// sets the fields it gives; the others keep their value.
import { Elysia, t } from 'elysia'
import type { Authenticator } from '../../http/auth.ts'
import { bearerAuth, claimedReader, IdentityHeaders } from '../route-helpers.ts'
import { bodyUserId, errorResponses, open } from '../schemas.ts'
import { changeOf, detailOf, MAX_INSTRUCTION_CHARS } from './instructions.ts'
import type { InstructionsStore } from './store.ts'

const instructionText = (description: string) =>
  t.Optional(
    t.Union([t.String(), t.Null()], {
      description: `${description} At most ${MAX_INSTRUCTION_CHARS} characters; null clears it.`,
    }),
  )

const InstructionsBody = t.Object(
  {
    enabled: t.Optional(
      t.Boolean({ description: 'Whether the instructions are given to the model.' }),
    ),
    about_user_message: instructionText('What the user says about themselves.'),
    about_model_message: instructionText('How the user wants the model to respond.'),
    user_id: bodyUserId('Development mode: the caller, if no X-User-Id.'),
  },
  {
    ...open,
    description:
      'Fields given are set, the others keep their value. Other fields (those of newer clients) are kept and returned as sent.',
  },
)

const InstructionsDetail = t.Object(
  {
    object: t.Literal('user_system_message_detail'),
    enabled: t.Boolean(),
    about_user_message: t.String(),
    about_model_message: t.String(),
  },
  open,
)

const UserQuery = t.Object(
  {
    user_id: t.Optional(
      t.String({ description: 'Development mode: the caller, if no X-User-Id.' }),
    ),
  },
  open,
)

const detail = (summary: string) => ({ ...bearerAuth, tags: ['conversation'], summary })

export function instructionsRoutes(deps: { instructions: InstructionsStore; auth: Authenticator }) {
  const { instructions, auth } = deps
  return new Elysia({ name: 'custom-instructions' })
    .get(
      '/user_system_messages',
      async ({ query, request }) => {
        const userId = await auth.userOf(request, claimedReader(request, query.user_id))
        return detailOf(await instructions.get(userId))
      },
      {
        query: UserQuery,
        headers: IdentityHeaders,
        response: { 200: InstructionsDetail, ...errorResponses(401, 403) },
        detail: detail("The user's custom instructions"),
      },
    )
    .post(
      '/user_system_messages',
      async ({ query, body, request }) => {
        // Checked before the caller is resolved: a bad body changes nothing either way.
        const change = changeOf(body as Record<string, unknown>)
        const userId = await auth.userOf(
          request,
          claimedReader(request, query.user_id) ?? body.user_id,
        )
        return detailOf(await instructions.change(userId, change))
      },
      {
        query: UserQuery,
        body: InstructionsBody,
        headers: IdentityHeaders,
        response: { 200: InstructionsDetail, ...errorResponses(401, 403, 422) },
        detail: detail("Set the user's custom instructions, given to the model when enabled"),
      },
    )
}
