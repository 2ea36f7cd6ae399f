// TypeBox schemas of the conversation API: they validate requests and describe
// the routes in the OpenAPI document. The types are derived from them.
import { t } from 'elysia'
import { ErrorBody } from '../http/error-schema.ts'
import { modelSendFields } from './model/send-schema.ts'

export const MAX_TEXT_CHARS = 100_000

/** Real clients send many fields this API does not use: accept and ignore them. */
export const open = { additionalProperties: true }

/** Who wrote an input message: only `user` (the contract's `role`, or chatgpt.com's `author.role`). */
const userRole = (description: string) => t.Optional(t.Literal('user', { description }))

const InputMessage = t.Object(
  {
    id: t.Optional(
      t.String({
        minLength: 1,
        maxLength: 128,
        description: 'Generated when absent. Required with action "variant".',
      }),
    ),
    role: userRole('`role` or `author.role` is required; when both are given they agree.'),
    author: t.Optional(t.Object({ role: userRole('As chatgpt.com clients send it.') }, open)),
    content: t.Object(
      {
        content_type: t.Union([t.Literal('text'), t.Literal('multimodal_text')], {
          description:
            '`text`, or `multimodal_text` for a message with images (CONTRACT §20; each part then a text or an image asset pointer).',
        }),
        parts: t.Array(t.Union([t.String(), t.Object({}, open)]), { minItems: 1, maxItems: 32 }),
      },
      open,
    ),
    metadata: t.Optional(
      t.Unknown({
        description:
          'Its `attachments` (`[{"id","name","mimeType","size","width?","height?"}]`) name the uploaded files it carries.',
      }),
    ),
  },
  open,
)

/** A body's `user_id`: who the caller is in development mode (CONTRACT §2). */
export const bodyUserId = (description: string) =>
  t.Optional(t.String({ minLength: 1, maxLength: 128, description }))

export const SendBody = t.Object(
  {
    user_id: bodyUserId('Required unless JWT auth is on.'),
    conversation_id: t.Optional(
      t.Union([t.String({ format: 'uuid' }), t.Null()], {
        description: 'Absent or null: start a new conversation.',
      }),
    ),
    messages: t.Array(InputMessage, { minItems: 1, maxItems: 16 }),
    parent_message_id: t.Optional(
      t.String({
        minLength: 1,
        maxLength: 128,
        description:
          'The message the new ones follow, or `client-created-root` (the top of the tree). ' +
          'Default: the conversation’s current node. Not in this conversation: 404.',
      }),
    ),
    action: t.Optional(
      t.Union([t.Literal('next'), t.Literal('variant')], {
        description:
          '`next` (default) answers the new messages; `variant` answers again the one stored ' +
          'user message named by `messages[0].id` (regenerate).',
      }),
    ),
    metadata: t.Optional(
      t.Object({ temperature: t.Optional(t.Number({ minimum: 0, maximum: 2 })) }, open),
    ),
    ...modelSendFields,
  },
  open,
)
export type SendBody = typeof SendBody.static

export const ResumeBody = t.Object(
  {
    conversation_id: t.String({ format: 'uuid' }),
    user_id: bodyUserId('Development mode: when given (or X-User-Id), must be the token’s user.'),
    // A Number with multipleOf, not t.Integer: Elysia would accept the string "3" for an Integer.
    offset: t.Optional(
      t.Number({
        minimum: 0,
        multipleOf: 1,
        description: 'First item to send (0 = delta_encoding).',
      }),
    ),
  },
  open,
)

/**
 * Query values arrive as text; routes parse them with clear errors (see
 * query-params.ts). Unknown parameters are ignored (CONTRACT §9).
 */
export const ListQuery = t.Object(
  {
    offset: t.Optional(t.String({ description: 'Integer ≥ 0, default 0.' })),
    limit: t.Optional(t.String({ description: 'Integer 1–100, default 20.' })),
    order: t.Optional(t.String({ description: '`updated` (default) or `created`, newest first.' })),
    is_archived: t.Optional(
      t.String({ description: '`false` (default): conversations not archived; `true`: archived.' }),
    ),
    user_id: t.Optional(
      t.String({ description: 'Development mode: the caller, if no X-User-Id.' }),
    ),
  },
  open,
)

export const ConversationList = t.Object({
  items: t.Array(
    t.Object({
      id: t.String({ format: 'uuid' }),
      title: t.String(),
      last_message: t.String(),
      updated_at: t.String({ format: 'date-time' }),
      is_archived: t.Boolean(),
      created_at: t.String({ format: 'date-time' }),
    }),
  ),
  limit: t.Integer(),
  offset: t.Integer(),
  total: t.Integer({ description: 'How many conversations of the listed kind there are.' }),
})

export { ConversationDetail } from './tree/detail-schema.ts'

export const StopBody = t.Object(
  {
    conversation_id: t.String({ format: 'uuid' }),
    user_id: bodyUserId('Development mode: the caller, if no X-User-Id.'),
  },
  open,
)

export const StopResult = t.Union([
  t.Object({ stopped: t.Literal(true), message_id: t.String() }),
  t.Object({ stopped: t.Literal(false) }),
])

/** chatgpt.com's key for the same answer, which newer clients read (CONTRACT §17). */
const streamingStatus = (status: 'IS_STREAMING' | 'NOT_STREAMING') =>
  t.Literal(status, { description: 'chatgpt.com’s key: `IS_STREAMING` or `NOT_STREAMING`.' })

export const StreamStatus = t.Union([
  t.Object({
    conversation_id: t.String({ format: 'uuid' }),
    status: streamingStatus('IS_STREAMING'),
    streaming: t.Literal(true),
    message_id: t.String(),
    token: t.String({ description: 'A fresh resume token (x-conduit-token).' }),
    offset: t.Integer({ minimum: 0, description: 'Items streamed so far.' }),
  }),
  t.Object({
    conversation_id: t.String({ format: 'uuid' }),
    status: streamingStatus('NOT_STREAMING'),
    streaming: t.Literal(false),
  }),
])

/** Error schemas for a route's `response` option. */
export const errorResponses = (...statuses: number[]) =>
  Object.fromEntries(statuses.map((status) => [status, ErrorBody]))

/** The same, as OpenAPI response objects, for routes whose answer no schema validates. */
export const errorResponseDocs = (...statuses: number[]) =>
  Object.fromEntries(
    statuses.map((status) => [
      status,
      { description: 'Error', content: { 'application/json': { schema: ErrorBody } } },
    ]),
  )
