// The TypeBox schema of the conversation detail (CONTRACT §4.6, §10, §17):
// chatgpt.com's conversation object, which is also one entry of the export.
// It describes GET /conversation/{id} and the export in the OpenAPI document;
// tests check real details against it. tree-detail.ts builds the object.
import { t } from 'elysia'

const strict = { additionalProperties: false }
const seconds = (description: string) =>
  t.Number({ description: `${description}, in Unix seconds with a fraction.` })
const nullable = <T extends Parameters<typeof t.Union>[0][number]>(schema: T) =>
  t.Union([schema, t.Null()])

const Content = t.Object(
  {
    content_type: t.String(),
    parts: t.Optional(t.Array(t.Union([t.String(), t.Record(t.String(), t.Unknown())]))),
  },
  {
    additionalProperties: true,
    description:
      'Text parts for the messages of this service, and image asset pointers in a user message’s `multimodal_text` (CONTRACT §20); an imported message keeps the content its export held (e.g. `code` with `text`).',
  },
)

const Metadata = t.Record(t.String(), t.Unknown())

const MappingMessage = t.Object(
  {
    id: t.String(),
    author: t.Object(
      {
        role: t.Union([
          t.Literal('user'),
          t.Literal('assistant'),
          t.Literal('system'),
          t.Literal('tool'),
        ]),
        name: nullable(t.String()),
        metadata: Metadata,
      },
      strict,
    ),
    create_time: seconds('When it was created; later than its parent'),
    update_time: seconds('When it last changed'),
    content: Content,
    status: t.String({
      description: '`finished_successfully`, `finished_partial_completion`, or `in_progress`.',
    }),
    end_turn: nullable(t.Boolean()),
    weight: t.Number(),
    metadata: Metadata,
    recipient: t.String(),
    channel: nullable(t.String()),
  },
  strict,
)

/** One node of chatgpt.com's `mapping`; the root node has no message. */
const MappingNode = t.Object(
  {
    id: t.String(),
    parent: nullable(t.String()),
    children: t.Array(t.String()),
    message: nullable(MappingMessage),
  },
  strict,
)

export const ConversationDetail = t.Object(
  {
    id: t.String({ format: 'uuid', description: 'The conversation id (chatgpt.com’s key).' }),
    conversation_id: t.String({ format: 'uuid' }),
    title: t.String(),
    create_time: seconds('When the conversation was created'),
    update_time: seconds('When it last changed'),
    current_node: nullable(
      t.String({ description: 'The newest reply of the branch last sent to.' }),
    ),
    default_model_slug: t.String({ description: 'The model the conversation answers with.' }),
    is_archived: t.Boolean(),
    moderation_results: t.Array(t.Unknown(), { maxItems: 0 }),
    messages: t.Array(
      t.Object(
        {
          id: t.String(),
          role: t.String(),
          content: Content,
          created_at: t.String({ format: 'date-time' }),
          parent_id: nullable(t.String()),
        },
        strict,
      ),
      { description: 'The current branch, from the top of the tree to current_node.' },
    ),
    mapping: t.Record(t.String(), MappingNode, {
      description:
        'Every message of the tree by id, plus the `client-created-root` node; keys in creation order, the root first.',
    }),
  },
  {
    ...strict,
    description:
      'chatgpt.com’s conversation object (an entry of its conversations.json), with this API’s `conversation_id` and `messages`.',
  },
)
