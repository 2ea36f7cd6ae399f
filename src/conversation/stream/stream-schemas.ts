// TypeBox schemas of the SSE events of a reply stream (CONTRACT §4.2-§4.3, §9,
// §11-§12), one per kind of item, as a client reads it: the `event:` line (when
// there is one) and the `data:` line parsed as JSON (`[DONE]` stays text). They
// describe the stream in the OpenAPI document; tests check real streams
// against them. encoding.ts builds the items.
import { type TSchema, t } from 'elysia'

const strict = { additionalProperties: false }
const id = t.String({ minLength: 1 })
const conversationId = t.String({ format: 'uuid' })
const content = t.Object({ content_type: t.Literal('text'), parts: t.Array(t.String()) }, strict)

/** An image a user message shows (CONTRACT §20), its content_type always given. */
const ImagePointer = t.Object(
  {
    content_type: t.Literal('image_asset_pointer'),
    asset_pointer: t.String({ pattern: '^file-service://file-' }),
    size_bytes: t.Optional(t.Union([t.Number(), t.Null()])),
    width: t.Optional(t.Union([t.Number(), t.Null()])),
    height: t.Optional(t.Union([t.Number(), t.Null()])),
  },
  strict,
)
const multimodalContent = t.Object(
  {
    content_type: t.Literal('multimodal_text'),
    parts: t.Array(t.Union([t.String(), ImagePointer])),
  },
  strict,
)
const Attachment = t.Object(
  {
    id: t.String(),
    name: t.Optional(t.String()),
    mimeType: t.Optional(t.String()),
    size: t.Optional(t.Number()),
    width: t.Optional(t.Number()),
    height: t.Optional(t.Number()),
  },
  strict,
)

const UserMessage = t.Object(
  {
    id,
    author: t.Object({ role: t.Literal('user') }, strict),
    create_time: t.Number({ description: 'Unix seconds with a fraction.' }),
    content: t.Union([content, multimodalContent]),
    status: t.Literal('finished_successfully'),
    end_turn: t.Null(),
    metadata: t.Object(
      {
        attachments: t.Optional(
          t.Array(Attachment, { description: 'The files the message carries (CONTRACT §20).' }),
        ),
      },
      strict,
    ),
  },
  strict,
)

const AssistantMessage = t.Object(
  {
    id,
    author: t.Object(
      { role: t.Literal('assistant'), name: t.Null(), metadata: t.Object({}, strict) },
      strict,
    ),
    create_time: t.Number({ description: 'Unix seconds with a fraction.' }),
    update_time: t.Number(),
    content: t.Object({ content_type: t.Literal('text'), parts: t.Tuple([t.Literal('')]) }, strict),
    status: t.Literal('in_progress'),
    end_turn: t.Null(),
    weight: t.Literal(1),
    metadata: t.Object(
      {
        model_slug: t.String(),
        parent_id: t.String({
          description:
            'The user message the reply answers; when added again, the last thoughts or tool message before it.',
        }),
        message_type: t.Union([t.Literal('next'), t.Literal('variant')], {
          description: '`variant` for a regenerated reply.',
        }),
      },
      strict,
    ),
    recipient: t.Literal('all'),
    channel: t.Null(),
  },
  strict,
)

const stepBase = {
  id,
  create_time: t.Number({ description: 'Unix seconds with a fraction.' }),
  update_time: t.Number(),
  weight: t.Literal(1),
}
const stepMetadata = t.Object(
  {
    model_slug: t.String(),
    parent_id: t.String({ description: 'The message before it in the turn.' }),
    is_error: t.Optional(t.Literal(true)),
  },
  strict,
)
const assistantAuthor = t.Object(
  { role: t.Literal('assistant'), name: t.Null(), metadata: t.Object({}, strict) },
  strict,
)

/** A turn's other messages (CONTRACT §21): thoughts, a call to a tool, the tool's answer. */
const StepMessage = t.Union([
  t.Object(
    {
      ...stepBase,
      author: assistantAuthor,
      content: t.Object(
        {
          content_type: t.Literal('thoughts'),
          thoughts: t.Tuple([
            t.Object(
              {
                summary: t.String(),
                content: t.Literal(''),
                chunks: t.Tuple([]),
                finished: t.Literal(false),
              },
              strict,
            ),
          ]),
          source_analysis_msg_id: t.String(),
        },
        strict,
      ),
      status: t.Literal('in_progress'),
      end_turn: t.Null(),
      metadata: stepMetadata,
      recipient: t.Literal('all'),
      channel: t.Literal('analysis'),
    },
    { ...strict, title: 'thoughts message' },
  ),
  t.Object(
    {
      ...stepBase,
      author: assistantAuthor,
      content: t.Object(
        { content_type: t.Literal('code'), language: t.Literal('json'), text: t.String() },
        strict,
      ),
      status: t.Literal('finished_successfully'),
      end_turn: t.Literal(false),
      metadata: stepMetadata,
      recipient: t.String({ description: 'The tool called.' }),
      channel: t.Null(),
    },
    { ...strict, title: 'tool call message' },
  ),
  t.Object(
    {
      ...stepBase,
      author: t.Object(
        { role: t.Literal('tool'), name: t.String(), metadata: t.Object({}, strict) },
        strict,
      ),
      content: t.Object({ content_type: t.Literal('execution_output'), text: t.String() }, strict),
      status: t.Literal('finished_successfully'),
      end_turn: t.Null(),
      metadata: stepMetadata,
      recipient: t.Literal('all'),
      channel: t.Null(),
    },
    { ...strict, title: 'tool result message' },
  ),
])

/** One SSE event: an optional `event:` line and the `data:` line. */
function sseEvent(
  title: string,
  description: string,
  event: 'delta_encoding' | 'delta' | undefined,
  data: TSchema,
) {
  const properties: Record<string, TSchema> =
    event === undefined ? { data } : { event: t.Literal(event), data }
  return t.Object(properties, { ...strict, title, description })
}

const jsonItem = (type: string, properties: Record<string, TSchema>) =>
  t.Object({ type: t.Literal(type), ...properties }, strict)

const patch = (operations: TSchema[]) =>
  t.Object({ p: t.Literal(''), o: t.Literal('patch'), v: t.Tuple(operations) }, strict)

const operation = (path: string, op: 'append' | 'replace', value: TSchema) =>
  t.Object({ p: t.Literal(path), o: t.Literal(op), v: value }, strict)

export const StreamEvents = [
  sseEvent(
    'delta_encoding',
    'Item 0: the encoding of the stream.',
    'delta_encoding',
    t.Literal('v1'),
  ),
  sseEvent(
    'resume_conversation_token',
    'Item 1: an HS256 JWT for POST /f/conversation/resume (x-conduit-token).',
    undefined,
    jsonItem('resume_conversation_token', { token: t.String(), conversation_id: conversationId }),
  ),
  sseEvent(
    'input_message',
    'One per stored input message, in order (none for action "variant").',
    undefined,
    jsonItem('input_message', { input_message: UserMessage, conversation_id: conversationId }),
  ),
  sseEvent(
    'assistant message add',
    'The reply, empty and in progress: first with `c` 0, and added again (a later `c`, the ' +
      'same id) after thoughts or tool messages; its appends follow.',
    'delta',
    t.Object(
      {
        p: t.Literal(''),
        o: t.Literal('add'),
        v: t.Object({ message: AssistantMessage, conversation_id: conversationId }, strict),
        c: t.Integer({ minimum: 0 }),
      },
      strict,
    ),
  ),
  sseEvent(
    'step message add',
    "A turn's other message (CONTRACT §21): a reasoning model's thoughts (then appended), " +
      "a call to a tool, or the tool's answer (each whole); `c` counts the turn's messages.",
    'delta',
    t.Object(
      {
        p: t.Literal(''),
        o: t.Literal('add'),
        v: t.Object({ message: StepMessage, conversation_id: conversationId }, strict),
        c: t.Integer({ minimum: 1 }),
      },
      strict,
    ),
  ),
  sseEvent(
    'thoughts append',
    "A chunk of the thoughts message's reasoning.",
    'delta',
    operation('/message/content/thoughts/0/content', 'append', t.String()),
  ),
  sseEvent(
    'step completion',
    'A thoughts or call message is finished; not the turn (no finish_details).',
    'delta',
    patch([
      operation('/message/status', 'replace', t.Literal('finished_successfully')),
      operation('/message/end_turn', 'replace', t.Literal(false)),
      operation('/message/metadata', 'append', t.Object({ is_complete: t.Literal(true) }, strict)),
    ]),
  ),
  sseEvent(
    'message_marker',
    'Before the first chunk of the reply.',
    undefined,
    jsonItem('message_marker', {
      conversation_id: conversationId,
      message_id: id,
      marker: t.Literal('user_visible_token'),
      event: t.Literal('first'),
    }),
  ),
  sseEvent(
    'append',
    'One chunk of the reply; the chunks concatenated are the stored reply.',
    'delta',
    patch([operation('/message/content/parts/0', 'append', t.String())]),
  ),
  sseEvent(
    'error',
    'The reply failed after the stream began; `error` repeats `detail` for ChatGPT clients.',
    undefined,
    jsonItem('error', {
      conversation_id: conversationId,
      message_id: id,
      code: t.Union([
        t.Literal('model_error'),
        t.Literal('storage_error'),
        t.Literal('interrupted'),
        t.Literal('state_unavailable'),
        t.Literal('storage_unavailable'),
        t.Literal('server_error'),
        t.Literal('attachment_unavailable'),
      ]),
      detail: t.String(),
      error: t.String(),
    }),
  ),
  sseEvent(
    'completion',
    'How the reply ended: finish_details `stop`, `interrupted` (a stop) or `error` (partial).',
    'delta',
    patch([
      operation(
        '/message/status',
        'replace',
        t.Union([t.Literal('finished_successfully'), t.Literal('finished_partial_completion')]),
      ),
      operation('/message/end_turn', 'replace', t.Boolean()),
      operation(
        '/message/metadata',
        'append',
        t.Object(
          {
            is_complete: t.Literal(true),
            finish_details: t.Object(
              {
                type: t.Union([t.Literal('stop'), t.Literal('interrupted'), t.Literal('error')]),
              },
              strict,
            ),
          },
          strict,
        ),
      ),
    ]),
  ),
  sseEvent(
    'title_generation',
    'The first turn of a new conversation: its title, as stored, once, as soon as it is known ' +
      '(between the reply chunks, or just before the error item and the completion).',
    undefined,
    jsonItem('title_generation', {
      title: t.String({ minLength: 1, maxLength: 80 }),
      conversation_id: conversationId,
    }),
  ),
  sseEvent(
    'message_stream_complete',
    'The turn is over.',
    undefined,
    jsonItem('message_stream_complete', { conversation_id: conversationId }),
  ),
  sseEvent(
    '[DONE]',
    'The last item; `data: [DONE]` is text, not JSON.',
    undefined,
    t.Literal('[DONE]'),
  ),
]

/** OpenAPI description of a reply stream: text/event-stream, each event one of StreamEvents. */
export const eventStreamResponse = {
  description:
    'Server-Sent Events in the delta_encoding v1 format, ending with `data: [DONE]`. ' +
    'Each event is one `data:` line of JSON (after an `event:` line for `delta_encoding` and ' +
    '`delta` items), followed by a blank line; `: ping` comments keep a quiet stream open. ' +
    'The schema describes one event: its `event` line and its parsed `data`.',
  content: {
    'text/event-stream': { schema: { oneOf: StreamEvents } },
  },
}
