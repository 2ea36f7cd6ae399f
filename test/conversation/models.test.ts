// Several models (CONTRACT §15-§16) over HTTP, against two fake
// OpenAI-compatible servers running as real processes on loopback - one slow
// (it streams word by word), one failing (a 500 that echoes its key) - and the
// local model: a send picks its model by slug, "auto" / empty / absent take
// the conversation's model and else the default, an unknown slug is a 422
// that stores nothing, every reply says which model wrote it, a regenerate
// may name another model, the reasoning effort reaches the reasoning model that takes
// it, custom instructions reach the request body after the model's system
// prompt, and the context is cut to fit the model's window.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import {
  estimateTokens,
  MESSAGE_OVERHEAD_TOKENS,
  REPLY_PRIMING_TOKENS,
} from '../../src/conversation/model/token-count.ts'
import { contextKey } from '../../src/conversation/reads/cache-keys.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationIdOf,
  dataOf,
  type Frame,
  get,
  newUser,
  post,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'
import { type FakeOpenAi, type RecordedRequest, startFakeOpenAi } from '../support/fake-openai.ts'

const FAST_KEY = 'sk-fast-0123456789abcdef'
const BROKEN_KEY = 'sk-broken-fedcba9876543210'
const MODEL_PROMPT = 'You are the fast test model. Answer briefly.'
/** The tiny model's window and reply share: about 190 tokens for the context. */
const TINY = { context_tokens: 300, max_tokens: 100 }

let slow: FakeOpenAi
let failing: FakeOpenAi

beforeAll(async () => {
  ;[slow, failing] = await Promise.all([startFakeOpenAi('slow'), startFakeOpenAi('failing')])
}, 30_000)

afterAll(async () => {
  await Promise.all([slow?.stop(), failing?.stop()])
})

function catalogue() {
  return JSON.stringify([
    { slug: 'local-a', title: 'Local A', provider: 'local', default: true },
    {
      slug: 'fast',
      title: 'Fast',
      provider: 'openai',
      model: 'gpt-4o-mini',
      base_url: slow.baseUrl,
      api_key_env: 'FAST_KEY',
      system_prompt: MODEL_PROMPT,
    },
    { slug: 'tiny', provider: 'openai', model: 'llama-tiny', base_url: slow.baseUrl, ...TINY },
    { slug: 'sluggish', provider: 'openai', model: 'llama-2500ms', base_url: slow.baseUrl },
    // A reasoning model by its name, with a reply limit.
    {
      slug: 'thinker',
      provider: 'openai',
      model: 'o4-mini',
      base_url: slow.baseUrl,
      max_tokens: 2000,
    },
    {
      slug: 'broken',
      provider: 'openai',
      model: 'gpt-4o',
      base_url: failing.baseUrl,
      api_key_env: 'BROKEN_KEY',
    },
  ])
}

const INSTRUCTIONS = '/backend-api/user_system_messages'

/** The assistant message of a stream's add item. */
const replyMessageOf = (frames: Frame[]) => {
  const add = frames.find((frame) => frame.data.includes('"o":"add"'))
  return dataOf<{
    v: { message: { id: string; metadata: { model_slug: string; message_type: string } } }
  }>(add).v.message
}

const replyTextOf = (frames: Frame[]) =>
  frames
    .filter((frame) => frame.data.includes('"/message/content/parts/0"'))
    .map((frame) => dataOf<{ v: [{ v: string }] }>(frame).v[0].v)
    .join('')

/** A text no other send of the run has, to find a send's request among those a fake got. */
const marker = () => `marker${crypto.randomUUID().slice(0, 8)}`

/** The streamed request a fake got for the send whose newest user message holds `mark`. */
async function requestWith(fake: FakeOpenAi, mark: string): Promise<RecordedRequest> {
  const found = (await fake.requests()).filter(
    (request) =>
      request.body.stream === true &&
      request.body.messages
        .filter((message) => message.role === 'user')
        .at(-1)
        ?.content?.includes(mark),
  )
  expect(found).toHaveLength(1)
  return found[0] as RecordedRequest
}

describeEachBackend(
  // The fakes' addresses are known once they started (beforeAll above).
  () => ({
    env: {
      MODELS: catalogue(),
      FAST_KEY,
      BROKEN_KEY,
      MODEL_TIMEOUT_MS: '1000',
    },
  }),
  (t) => {
    afterAll(async () => {
      await t?.conversations.whenIdle()
    })

    /** Sends one message as `user` (to `conversation` when given) with the extra body fields. */
    async function send(
      user: string,
      text: string,
      extra: Record<string, unknown> = {},
      conversation?: string,
    ) {
      const sent = await sendAndRead(t.app, {
        user_id: user,
        ...(conversation ? { conversation_id: conversation } : {}),
        messages: [textMessage(text, crypto.randomUUID())],
        ...extra,
      })
      return { ...sent, conversationId: sent.response.ok ? conversationIdOf(sent.frames) : '' }
    }

    const conversationModel = async (id: string) =>
      (
        await t.db.query<{ default_model_slug: string | null }>(
          'SELECT default_model_slug FROM conversations WHERE id = $1',
          [id],
        )
      )[0]?.default_model_slug

    const detailOf = async (user: string, id: string) =>
      (await (
        await get(t.app, `/backend-api/conversation/${id}`, { 'x-user-id': user })
      ).json()) as {
        current_node: string
        default_model_slug: string
        messages: { id: string; role: string; parent_id: string | null }[]
        mapping: Record<string, { message: { metadata: Record<string, unknown> } | null }>
      }

    const listTotal = async (user: string) =>
      (
        (await (await get(t.app, '/backend-api/conversations', { 'x-user-id': user })).json()) as {
          total: number
        }
      ).total

    test("GET /models lists the catalogue with its default, in chatgpt.com's shape", async () => {
      const response = await get(t.app, '/backend-api/models')
      expect(response.status).toBe(200)
      const body = (await response.json()) as {
        models: { slug: string; title: string; max_tokens: number }[]
        categories: { default_model: string; supported_models: string[] }[]
        default_model_slug: string
      }
      expect(body.models.map((model) => [model.slug, model.title, model.max_tokens])).toEqual([
        ['local-a', 'Local A', 8191],
        ['fast', 'Fast', 8191],
        ['tiny', 'tiny', TINY.max_tokens],
        ['sluggish', 'sluggish', 8191],
        ['thinker', 'thinker', 2000],
        ['broken', 'broken', 8191],
      ])
      // gpt4free takes the last category's default_model as its own.
      expect(body.categories.at(-1)?.default_model).toBe('local-a')
      expect(body.categories.at(-1)?.supported_models).toHaveLength(6)
      expect(body.default_model_slug).toBe('local-a')
      // No key of the catalogue is ever shown.
      expect(JSON.stringify(body)).not.toContain(FAST_KEY)
    })

    test('a send picks its model by slug; the stream, the reply and the conversation say which', async () => {
      const user = newUser()
      const mark = marker()
      const { response, frames, conversationId } = await send(user, `${mark} hello there`, {
        model: 'fast',
      })
      expect(response.status).toBe(200)
      expect(replyMessageOf(frames).metadata.model_slug).toBe('fast')
      expect(replyTextOf(frames)).toBe(
        `Reply of gpt-4o-mini to "${mark} hello there" (2 messages).`,
      )
      const request = await requestWith(slow, mark)
      // The catalogue's `model` is what the server is asked for, with the key of api_key_env.
      expect(request.body.model).toBe('gpt-4o-mini')
      expect(request.authorization).toBe(`Bearer ${FAST_KEY}`)
      expect(request.body.messages).toEqual([
        { role: 'system', content: MODEL_PROMPT },
        { role: 'user', content: `${mark} hello there` },
      ])
      expect(await conversationModel(conversationId)).toBe('fast')
      const detail = await detailOf(user, conversationId)
      expect(detail.mapping[detail.current_node]?.message?.metadata.model_slug).toBe('fast')
      // The first reply of the fast model named the conversation with the same server.
      const titles = (await slow.requests()).filter((r) => r.body.stream !== true)
      expect(titles.some((r) => JSON.stringify(r.body.messages).includes(mark))).toBe(true)
    })

    test('"auto", empty and absent take the conversation\'s model, else the default', async () => {
      const user = newUser()
      const first = await send(user, 'no model named')
      expect(replyMessageOf(first.frames).metadata.model_slug).toBe('local-a')
      expect(await conversationModel(first.conversationId)).toBe('local-a')
      const auto = await send(user, 'auto in a new one', { model: 'auto' })
      expect(replyMessageOf(auto.frames).metadata.model_slug).toBe('local-a')

      const fast = await send(user, 'start with fast', { model: 'fast' })
      const id = fast.conversationId
      for (const model of ['auto', '', null, undefined]) {
        const mark = marker()
        const next = await send(user, `${mark} go on`, model === undefined ? {} : { model }, id)
        expect(next.response.status).toBe(200)
        expect(replyMessageOf(next.frames).metadata.model_slug).toBe('fast')
        expect((await requestWith(slow, mark)).body.model).toBe('gpt-4o-mini')
      }
      expect(await conversationModel(id)).toBe('fast')
      // A send naming another model makes it the conversation's model from then on.
      await send(user, 'now locally', { model: 'local-a' }, id)
      expect(await conversationModel(id)).toBe('local-a')
      const after = await send(user, 'and on', { model: 'auto' }, id)
      expect(replyMessageOf(after.frames).metadata.model_slug).toBe('local-a')
    })

    test('an unknown slug is a 422 naming it, and nothing is stored', async () => {
      const user = newUser()
      const refused = await send(user, 'to a model that does not exist', {
        model: 'gpt-9-imaginary',
      })
      expect(refused.response.status).toBe(422)
      const error = JSON.parse(refused.text) as { detail: string; code: string }
      expect(error.detail).toContain('"gpt-9-imaginary"')
      expect(error.detail).toContain('"model"')
      expect(await listTotal(user)).toBe(0)

      const existing = await send(user, 'a real one', { model: 'fast' })
      const before = await detailOf(user, existing.conversationId)
      for (const model of ['nope', 'FAST', ' fast', 'x'.repeat(129), 7, {}, ['fast']]) {
        const bad = await send(user, 'hostile model field', { model }, existing.conversationId)
        expect(bad.response.status).toBe(422)
        expect(JSON.parse(bad.text)).toMatchObject({ detail: expect.stringContaining('model') })
      }
      expect(await detailOf(user, existing.conversationId)).toEqual(before)
      expect(await listTotal(user)).toBe(1)
    })

    test('a regenerate may name another model; the conversation keeps its own', async () => {
      const user = newUser()
      const asked = crypto.randomUUID()
      const first = await sendAndRead(t.app, {
        user_id: user,
        model: 'fast',
        messages: [textMessage('regenerate me', asked)],
      })
      const id = conversationIdOf(first.frames)
      const again = await sendAndRead(t.app, {
        user_id: user,
        conversation_id: id,
        action: 'variant',
        model: 'local-a',
        messages: [textMessage('regenerate me', asked)],
      })
      expect(again.response.status).toBe(200)
      const reply = replyMessageOf(again.frames)
      expect(reply.metadata).toMatchObject({ model_slug: 'local-a', message_type: 'variant' })
      const detail = await detailOf(user, id)
      const slugs = Object.values(detail.mapping)
        .map((node) => node.message?.metadata.model_slug)
        .filter(Boolean)
      expect(slugs.sort()).toEqual(['fast', 'local-a'])
      expect(await conversationModel(id)).toBe('fast')
      // The detail says the stored model, not the newest reply's (CONTRACT §17).
      expect(detail.default_model_slug).toBe('fast')
    })

    test('thinking_effort reaches a reasoning model as reasoning_effort; other models never get it', async () => {
      const user = newUser()
      const cases: [Record<string, unknown>, string | undefined][] = [
        [{ thinking_effort: 'extended' }, 'high'],
        [{ thinking_effort: 'min' }, 'low'],
        [{ reasoning_effort: 'medium', thinking_effort: 'max' }, 'medium'],
        [{ thinking_effort: 'turbo-ultra' }, undefined],
        [{ thinking_effort: null }, undefined],
        [{}, undefined],
      ]
      for (const [fields, expected] of cases) {
        const mark = marker()
        const sent = await send(user, `${mark} think`, { model: 'thinker', ...fields })
        expect(sent.response.status).toBe(200)
        const { body } = await requestWith(slow, mark)
        expect(body.reasoning_effort).toBe(expected)
        // A reasoning model's reply limit is max_completion_tokens (it refuses max_tokens).
        expect([body.max_completion_tokens, body.max_tokens]).toEqual([2000, undefined])
      }
      // gpt-4o-mini takes no reasoning effort (OpenAI would refuse the request): it is not sent,
      // nor a reply limit the entry did not set; tiny's limit goes as max_tokens.
      for (const slug of ['fast', 'tiny']) {
        const mark = marker()
        const sent = await send(user, `${mark} think`, { model: slug, thinking_effort: 'max' })
        expect(sent.response.status).toBe(200)
        const { body } = await requestWith(slow, mark)
        expect([body.reasoning_effort, body.max_completion_tokens, body.max_tokens]).toEqual([
          undefined,
          undefined,
          slug === 'tiny' ? TINY.max_tokens : undefined,
        ])
      }
      const local = await send(user, 'think locally', { thinking_effort: 'extended' })
      expect(local.response.status).toBe(200)
      expect(replyMessageOf(local.frames).metadata.model_slug).toBe('local-a')
      for (const bad of ['x'.repeat(33), 7, { level: 'high' }]) {
        const refused = await send(user, 'bad effort', { model: 'fast', thinking_effort: bad })
        expect(refused.response.status).toBe(422)
        expect(refused.text).toContain('thinking_effort')
      }
    })

    test("custom instructions reach the request body after the model's system prompt", async () => {
      const user = newUser()
      const set = await post(t.app, INSTRUCTIONS, {
        user_id: user,
        enabled: true,
        about_user_message: 'I am a marine biologist.',
        about_model_message: 'Answer in haiku.',
      })
      expect(set.status).toBe(200)
      const mark = marker()
      await send(user, `${mark} tell me about whales`, { model: 'fast' })
      const [system, ...rest] = (await requestWith(slow, mark)).body.messages
      expect(system?.role).toBe('system')
      const content = system?.content ?? ''
      expect(content.startsWith(MODEL_PROMPT)).toBe(true)
      expect(content.indexOf('I am a marine biologist.')).toBeGreaterThan(MODEL_PROMPT.length)
      expect(content).toContain('Answer in haiku.')
      expect(rest.every((message) => message.role !== 'system')).toBe(true)

      // A model without a system prompt gets the instructions alone.
      const tinyMark = marker()
      await send(user, `${tinyMark} short`, { model: 'tiny' })
      const tinySystem = (await requestWith(slow, tinyMark)).body.messages[0]
      expect(tinySystem?.role).toBe('system')
      expect(tinySystem?.content).toContain('I am a marine biologist.')

      // Someone else's sends carry none of them.
      const otherMark = marker()
      await send(newUser(), `${otherMark} hello`, { model: 'fast' })
      expect((await requestWith(slow, otherMark)).body.messages[0]).toEqual({
        role: 'system',
        content: MODEL_PROMPT,
      })

      // Turned off, they are gone from the next turn (no stale cached copy).
      await post(t.app, INSTRUCTIONS, { user_id: user, enabled: false })
      const offMark = marker()
      await send(user, `${offMark} again`, { model: 'fast' })
      expect((await requestWith(slow, offMark)).body.messages[0]).toEqual({
        role: 'system',
        content: MODEL_PROMPT,
      })
    })

    test('custom instructions reach the turns of an existing conversation, the one queued behind another too', async () => {
      const user = newUser()
      await post(t.app, INSTRUCTIONS, {
        user_id: user,
        enabled: true,
        about_user_message: 'I keep bees.',
      })
      const first = await send(user, `${marker()} hello`, { model: 'fast' })
      const marks = [marker(), marker()]
      // Sent together: the second is accepted while the first holds the
      // conversation, so it queues and its runner claims it afterwards.
      await Promise.all(
        marks.map((mark) => send(user, `${mark} more`, { model: 'fast' }, first.conversationId)),
      )
      for (const mark of marks) {
        const [system] = (await requestWith(slow, mark)).body.messages
        expect({ mark, system: system?.content }).toEqual({
          mark,
          system: expect.stringContaining('I keep bees.'),
        })
      }
    })

    test('the local model is given them too: its reply says it follows instructions', async () => {
      const user = newUser()
      const plain = await send(user, 'hello')
      expect(replyTextOf(plain.frames)).not.toContain('instructions')
      await post(t.app, INSTRUCTIONS, {
        user_id: user,
        enabled: true,
        about_model_message: 'Be brief.',
      })
      const instructed = await send(user, 'hello')
      expect(replyTextOf(instructed.frames)).toContain('I am following my instructions')
    })

    test('the context is cut from the oldest to fit context_tokens minus max_tokens', async () => {
      const user = newUser()
      // About 50 tokens each by the estimate: three user messages alone overflow the budget.
      const long = (n: number) => `${marker()} message${n} ${'lorem ipsum dolor '.repeat(7)}`
      const texts = [long(1), long(2), long(3), long(4)]
      let id: string | undefined
      for (const text of texts) id = (await send(user, text, { model: 'tiny' }, id)).conversationId
      const conversation = id as string
      const last = texts.at(-1) as string
      const mark = /marker\w+/.exec(last)?.[0] as string
      const { messages } = (await requestWith(slow, mark)).body
      // The branch holds 7 messages before the reply; fewer were sent, newest kept.
      expect(messages.length).toBeLessThan(7)
      expect(messages.length).toBeGreaterThan(1)
      expect(messages.at(-1)).toEqual({ role: 'user', content: last })
      expect(messages.some((message) => message.content === texts[0])).toBe(false)
      // What was sent fits the window by the service's own (conservative) count.
      const used =
        messages.reduce(
          (sum, message) => sum + estimateTokens(message.content ?? '') + MESSAGE_OVERHEAD_TOKENS,
          0,
        ) + REPLY_PRIMING_TOKENS
      expect(used).toBeLessThanOrEqual(TINY.context_tokens - TINY.max_tokens)
      // The kept messages are the newest ones, in order: a tail of the branch.
      const detail = await detailOf(user, conversation)
      expect(detail.messages).toHaveLength(8)
      // The context list keeps the 20-message rule, whatever the model's window.
      expect(await t.cache.listAll(contextKey(conversation))).toHaveLength(8)

      // A message longer than the whole budget is still sent, alone.
      const huge = `${marker()} ${'enormous '.repeat(400)}`
      await send(user, huge, { model: 'tiny' }, conversation)
      const hugeMark = /marker\w+/.exec(huge)?.[0] as string
      expect((await requestWith(slow, hugeMark)).body.messages).toEqual([
        { role: 'user', content: huge },
      ])
    })

    test('a failing model: the error is streamed and stored, its key never shown', async () => {
      const user = newUser()
      const { response, frames, text, conversationId } = await send(user, 'break please', {
        model: 'broken',
      })
      expect(response.status).toBe(200)
      const error = frames
        .map((frame) => (frame.data.startsWith('{') ? dataOf(frame) : {}))
        .find((item) => item.type === 'error') as { code: string; detail: string } | undefined
      expect(error?.code).toBe('model_error')
      expect(error?.detail).toContain('status 500')
      expect(text).not.toContain(BROKEN_KEY)
      // The server was sent the key, and echoed it: the service masked it.
      expect(
        (await failing.requests()).some((r) => r.authorization === `Bearer ${BROKEN_KEY}`),
      ).toBe(true)
      expect(replyMessageOf(frames).metadata.model_slug).toBe('broken')
      const detail = await detailOf(user, conversationId)
      expect(JSON.stringify(detail)).not.toContain(BROKEN_KEY)
      expect(frames.at(-1)?.data).toBe('[DONE]')
    })

    test('a model silent past MODEL_TIMEOUT_MS fails its turn and keeps what came', async () => {
      const user = newUser()
      const started = performance.now()
      const { frames } = await send(user, 'take your time', { model: 'sluggish' })
      const error = frames
        .map((frame) => (frame.data.startsWith('{') ? dataOf(frame) : {}))
        .find((item) => item.type === 'error') as { detail: string } | undefined
      expect(error?.detail).toContain('did not answer within 1 s')
      expect(replyTextOf(frames)).toBe('Reply ')
      // Bounded by the timeout, not by the 2.5 s the server would have taken per word.
      expect(performance.now() - started).toBeLessThan(8_000)
    })
  },
)
