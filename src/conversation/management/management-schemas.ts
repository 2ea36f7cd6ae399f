// TypeBox schemas of conversation management (CONTRACT §9 models, §11): they
// validate the requests and describe the routes in the OpenAPI document. Each
// rule is said here once; the one a schema cannot say (a PATCH must change
// something) is the function at the end.
import { t } from 'elysia'
import { invalid } from '../../errors.ts'
import { bodyUserId, open } from '../schemas.ts'

export const MAX_TITLE_CHARS = 256
export const MAX_SEARCH_CHARS = 256
export const MAX_FEEDBACK_CHARS = 10_000

export const Title = t.String({
  minLength: 1,
  maxLength: MAX_TITLE_CHARS,
  // One line with some text: no control characters (nor NUL, which Postgres refuses).
  pattern: '^(?=.*\\S)[^\\x00-\\x1f\\x7f]+$',
  error: `must be 1–${MAX_TITLE_CHARS} characters on one line, not only spaces`,
  description: `1–${MAX_TITLE_CHARS} characters on one line.`,
})

export const ConversationPatch = t.Object(
  {
    title: t.Optional(Title),
    is_archived: t.Optional(t.Boolean()),
    is_visible: t.Optional(
      t.Literal(false, { description: 'false deletes the conversation for good.' }),
    ),
    user_id: bodyUserId('Development mode: the caller, if no X-User-Id.'),
  },
  open,
)
export type ConversationPatch = typeof ConversationPatch.static

export const ConversationsPatch = t.Object(
  {
    is_archived: t.Optional(
      t.Literal(true, { description: "true archives all the user's conversations." }),
    ),
    is_visible: t.Optional(
      t.Literal(false, { description: "false deletes all the user's conversations for good." }),
    ),
    user_id: bodyUserId('Development mode: the caller, if no X-User-Id.'),
  },
  open,
)
export type ConversationsPatch = typeof ConversationsPatch.static

export const Success = t.Object({ success: t.Literal(true) })

/** Query values arrive as text; `limit` is parsed by query-params.ts. */
export const SearchQuery = t.Object(
  {
    query: t.String({
      minLength: 1,
      maxLength: MAX_SEARCH_CHARS,
      pattern: '^[^\\x00]+$',
      error: `must be 1–${MAX_SEARCH_CHARS} characters`,
      description: 'Text to find in titles and messages: a literal substring, any case.',
    }),
    limit: t.Optional(t.String({ description: 'Integer 1–50, default 20.' })),
    user_id: t.Optional(
      t.String({ description: 'Development mode: the caller, if no X-User-Id.' }),
    ),
  },
  open,
)

export const SearchResult = t.Object({
  items: t.Array(
    t.Object({
      id: t.String({ format: 'uuid' }),
      title: t.String(),
      snippet: t.String({ description: 'The text around the first match.' }),
      updated_at: t.String({ format: 'date-time' }),
    }),
  ),
})

export const FeedbackBody = t.Object(
  {
    conversation_id: t.String({ format: 'uuid' }),
    message_id: t.String({
      minLength: 1,
      maxLength: 128,
      description: 'A reply of the conversation.',
    }),
    rating: t.Union([t.Literal('thumbsUp'), t.Literal('thumbsDown')], {
      error: 'must be "thumbsUp" or "thumbsDown"',
    }),
    text: t.Optional(
      t.String({
        maxLength: MAX_FEEDBACK_CHARS,
        pattern: '^[^\\x00]*$',
        error: `must be at most ${MAX_FEEDBACK_CHARS} characters`,
        description: 'What the user said about the reply.',
      }),
    ),
    user_id: bodyUserId('Development mode: the caller, if no X-User-Id.'),
  },
  open,
)
export type FeedbackBody = typeof FeedbackBody.static

/** A PATCH that sets none of the fields it can change is refused (CONTRACT §11). */
export function requireSomeChange<T extends object>(
  body: T,
  fields: readonly (keyof T & string)[],
) {
  if (fields.every((field) => body[field] === undefined))
    throw invalid(
      `The body must set at least one of ${fields.map((field) => `"${field}"`).join(', ')}.`,
    )
}
