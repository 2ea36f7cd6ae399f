// TypeBox schemas of the shared-link routes (CONTRACT §23): they validate the
// requests and describe the routes in the OpenAPI document. The title rule is
// the conversation's (management-schemas.ts).
import { t } from 'elysia'
import { Title } from '../management/management-schemas.ts'
import { bodyUserId, open } from '../schemas.ts'

export const ShareCreateBody = t.Object(
  {
    conversation_id: t.String({ format: 'uuid' }),
    current_node_id: t.String({
      minLength: 1,
      maxLength: 128,
      description:
        'The message the shared branch ends with (finished; the branch above it is shared).',
    }),
    user_id: bodyUserId('Development mode: the caller, if no X-User-Id.'),
  },
  open,
)
export type ShareCreateBody = typeof ShareCreateBody.static

export const SharePatch = t.Object(
  {
    title: t.Optional(Title),
    is_public: t.Optional(
      t.Boolean({
        description: 'false: the link answers 404 to everyone until made public again.',
      }),
    ),
    user_id: bodyUserId('Development mode: the caller, if no X-User-Id.'),
  },
  open,
)
export type SharePatch = typeof SharePatch.static

const seconds = t.Number({ description: 'Unix seconds with a fraction.' })

/** A link as its owner sees it (create and PATCH). */
export const ShareInfo = t.Object({
  share_id: t.String({ format: 'uuid' }),
  share_url: t.String({ description: 'The read-only page of the link.' }),
  title: t.String(),
  is_public: t.Boolean(),
  is_visible: t.Boolean(),
  is_anonymous: t.Boolean(),
  highlighted_message_id: t.Null(),
  current_node_id: t.String(),
  conversation_id: t.String({ format: 'uuid' }),
  create_time: seconds,
  update_time: seconds,
  moderation_state: t.Object({
    has_been_moderated: t.Boolean(),
    has_been_blocked: t.Boolean(),
    has_been_accepted: t.Boolean(),
    has_been_auto_blocked: t.Boolean(),
    has_been_auto_moderated: t.Boolean(),
  }),
  already_exists: t.Optional(
    t.Boolean({ description: 'On create: true when this message was shared before (that link).' }),
  ),
})
