// The send body's model fields (CONTRACT §15), spread into SendBody
// (schemas.ts): which model answers, and how hard it should think.
import { t } from 'elysia'

const effort = (description: string) =>
  t.Optional(t.Union([t.String({ maxLength: 32 }), t.Null()], { description }))

export const modelSendFields = {
  model: t.Optional(
    t.Union([t.String({ maxLength: 128 }), t.Null()], {
      description:
        'A slug of GET /backend-api/models. `auto`, empty or absent: the conversation’s model, else the default. Unknown: 422.',
    }),
  ),
  thinking_effort: effort(
    'chatgpt.com’s `min`, `standard`, `extended` or `max`; passed to models that take a reasoning effort.',
  ),
  reasoning_effort: effort(
    'OpenAI’s `none`, `minimal`, `low`, `medium`, `high` or `xhigh`; wins over thinking_effort.',
  ),
}
