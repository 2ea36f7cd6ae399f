// Titles (CONTRACT §11, §23): the first turn of a new conversation streams a
// title_generation item as soon as the title is known - between the reply's
// items when it is ready first, else just before the completion patch (where
// gpt4free stops reading) - never after it; the `openai` model writes it from
// the first user message with a short separate request sent as the turn
// starts, and when that fails, is late (past the ending's short wait) or the
// model writes none (the local model) it is the first user message cut to 80
// characters. The stored title, the list and the item agree, also for a
// resumed or replayed stream.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { titleFrom } from '../../src/conversation/messages.ts'
import { createOpenAiModel } from '../../src/conversation/model/openai.ts'
import { suiteApp } from '../support/backend-apps.ts'
import { appBackends } from '../support/backends.ts'
import { gpt4freeRead } from '../support/client-parsers.ts'
import {
  conversationApp,
  conversationIdOf,
  dataOf,
  type Frame,
  framesOf,
  get,
  newUser,
  post,
  recordingStatements,
  sendAndRead,
  type TestApp,
  textMessage,
} from '../support/conversation-app.ts'

const SEND = '/backend-api/f/conversation'
const MODEL_TITLE = 'Planning a Trip to Kyoto'

/** The kind of each item: its event or `type`, the delta's `o`, or [DONE]. */
const kinds = (frames: Frame[]) =>
  frames.map((frame) => {
    if (frame.event === 'delta_encoding' || frame.data === '[DONE]')
      return frame.event ?? frame.data
    const item = dataOf<{ type?: string; o?: string; v?: { p: string }[] }>(frame)
    if (item.o === 'patch') return item.v?.[0]?.p === '/message/status' ? 'completion' : 'append'
    return item.type ?? item.o
  })

/** The last items of a first turn: its title item no later than just before the completion patch. */
function expectTitleBeforeEnd(frames: Frame[]) {
  const all = kinds(frames)
  expect(all.slice(-3)).toEqual(['completion', 'message_stream_complete', '[DONE]'])
  expect(all.filter((kind) => kind === 'title_generation')).toHaveLength(1)
  expect(all.indexOf('title_generation')).toBeLessThan(all.indexOf('completion'))
}

/** A stream's body as the frames a client reads, one `…\n\n` each. */
const rawFrames = (text: string) =>
  text
    .split('\n\n')
    .filter((frame) => frame !== '')
    .map((frame) => `${frame}\n\n`)

const titleItems = (frames: Frame[]) =>
  frames
    .filter((frame) => frame.event === undefined && frame.data.includes('"title_generation"'))
    .map((frame) => dataOf<{ type: string; title: string; conversation_id: string }>(frame))

/** A fake OpenAI-compatible server: streamed replies, and titles by scenario (the first path segment). */
function fakeOpenAi() {
  const titleRequests: { scenario: string; body: Record<string, unknown> }[] = []
  /** Resolved once the service gave up on (aborted) a title request of `stalled` or `broken`. */
  const abandoned = new Map<string, () => void>()
  const gaveUp = (scenario: string) =>
    new Promise<void>((resolve) => {
      abandoned.set(scenario, resolve)
    })
  const gaveUpOn = { stalled: gaveUp('stalled'), broken: gaveUp('broken') }
  let releaseGate = () => {}
  const gate = new Promise<void>((resolve) => {
    releaseGate = resolve
  })
  let releaseHeld = () => {}
  let titleAsked = () => {}
  const held = new Promise<void>((resolve) => {
    releaseHeld = resolve
  })
  const asked = new Promise<void>((resolve) => {
    titleAsked = resolve
  })
  const chunk = (content: string) =>
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`
  const answer = (content: unknown) =>
    Response.json({ choices: [{ index: 0, message: { role: 'assistant', content } }] })
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    async fetch(request) {
      const scenario = new URL(request.url).pathname.split('/')[1] ?? ''
      const body = (await request.json()) as Record<string, unknown>
      if (body.stream === true && scenario === 'broken')
        return Response.json({ error: { message: 'overloaded' } }, { status: 500 })
      if (body.stream === true && scenario === 'gated') {
        // The reply's second half waits until the test saw the title streamed.
        const encoder = new TextEncoder()
        const body = new ReadableStream<Uint8Array>({
          async start(controller) {
            controller.enqueue(encoder.encode(chunk('Kyoto in spring ')))
            await gate
            controller.enqueue(
              encoder.encode(
                `${chunk('is lovely.')}data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`,
              ),
            )
            controller.close()
          },
        })
        return new Response(body, { headers: { 'content-type': 'text/event-stream' } })
      }
      if (body.stream === true)
        return new Response(
          `${chunk('Kyoto in spring ')}${chunk('is lovely.')}` +
            `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`,
          { headers: { 'content-type': 'text/event-stream' } },
        )
      titleRequests.push({ scenario, body })
      switch (scenario) {
        case 'held':
          titleAsked()
          await held
          return answer(`"${MODEL_TITLE}"`)
        case 'stalled':
        case 'broken':
          // Never answers: the service must end the turn anyway, and abort this request.
          await new Promise<void>((resolve) =>
            request.signal.addEventListener('abort', () => resolve(), { once: true }),
          )
          abandoned.get(scenario)?.()
          return answer('too late')
        case 'long':
          return answer('A '.repeat(100))
        case 'fails':
          return Response.json({ error: { message: 'overloaded' } }, { status: 500 })
        case 'empty':
          return answer('')
        case 'garbage':
          return new Response('<html>not json</html>', { status: 200 })
        default:
          return answer(`Title: "${MODEL_TITLE}"`)
      }
    },
  })
  return { server, titleRequests, releaseHeld, asked, releaseGate, gaveUpOn }
}

for (const backend of appBackends())
  describe(backend.name, () => {
    describe('with the local model', () => {
      const t = suiteApp({ backend })

      test('the first turn streams the first message, cut to 80 characters, as its title', async () => {
        const user = newUser()
        const first = `${'A rather long opening question about many things '.repeat(3)}and more`
        const { frames, text } = await sendAndRead(t.app, {
          user_id: user,
          messages: [textMessage(first)],
        })
        expectTitleBeforeEnd(frames)
        const cid = conversationIdOf(frames)
        const expected = titleFrom(first)
        expect(Array.from(expected)).toHaveLength(80)
        expect(titleItems(frames)).toEqual([
          { type: 'title_generation', title: expected, conversation_id: cid },
        ])
        // gpt4free, which stops reading at the completion patch, gets it.
        expect(gpt4freeRead(rawFrames(text)).title).toBe(expected)
        const list = (await (
          await get(t.app, '/backend-api/conversations', { 'x-user-id': user })
        ).json()) as { items: { id: string; title: string }[] }
        expect(list.items).toMatchObject([{ id: cid, title: expected }])
      })

      test('the title costs no statement of its own: the final write of the reply reads it', async () => {
        const { db, statements } = recordingStatements(await backend.db())
        const counted = await conversationApp({ backend, db })
        const { frames } = await sendAndRead(counted.app, {
          user_id: newUser(),
          messages: [textMessage('name me without asking again')],
        })
        await counted.conversations.whenIdle()
        expect(titleItems(frames).map((item) => item.title)).toEqual([
          'name me without asking again',
        ])
        expect(statements.filter((text) => /SELECT\s+c\.title/.test(text))).toEqual([])
        expect(statements.filter((text) => text.includes('RETURNING c.title'))).toHaveLength(1)
        await counted.conversations.close(0)
      })

      test('later turns, edits and regenerations stream no title', async () => {
        const user = newUser()
        const first = await sendAndRead(t.app, {
          user_id: user,
          messages: [textMessage('hello', 'h1')],
        })
        const cid = conversationIdOf(first.frames)
        const later = [
          { messages: [textMessage('more', 'h2')] },
          { messages: [textMessage('edited', 'h3')], parent_message_id: 'client-created-root' },
          { messages: [textMessage('hello', 'h1')], action: 'variant' },
        ]
        for (const extra of later) {
          const { response, frames } = await sendAndRead(t.app, {
            user_id: user,
            conversation_id: cid,
            ...extra,
          })
          expect(response.status).toBe(200)
          expect(titleItems(frames)).toEqual([])
          expect(kinds(frames).slice(-3)).toEqual([
            'completion',
            'message_stream_complete',
            '[DONE]',
          ])
        }
      })

      test('a replayed stream holds the same title item', async () => {
        const user = newUser()
        const { frames, text } = await sendAndRead(t.app, {
          user_id: user,
          messages: [textMessage('replay me')],
        })
        const { token, conversation_id } = dataOf<{ token: string; conversation_id: string }>(
          frames[1],
        )
        const replay = await post(
          t.app,
          '/backend-api/f/conversation/resume',
          { conversation_id, offset: 0 },
          { 'x-conduit-token': token },
        )
        expect(await replay.text()).toBe(text)
        expect(titleItems(frames)[0]?.title).toBe('replay me')
      })
    })

    describe('with the openai model', () => {
      let fake: ReturnType<typeof fakeOpenAi>
      const apps = new Map<string, TestApp>()
      beforeAll(async () => {
        fake = fakeOpenAi()
        for (const scenario of [
          'good',
          'held',
          'long',
          'fails',
          'empty',
          'garbage',
          'gated',
          'stalled',
          'broken',
        ])
          apps.set(
            scenario,
            await conversationApp({
              backend,
              // A stalled title model holds a normal ending up 300 ms at most; a failed one, never.
              titleWaitMs:
                scenario === 'stalled' ? 300 : scenario === 'broken' ? 60_000 : undefined,
              model: createOpenAiModel({
                slug: 'gpt-test',
                baseUrl: `http://127.0.0.1:${fake.server.port}/${scenario}`,
                timeoutMs: 5_000,
              }),
            }),
          )
      })
      afterAll(() => fake.server.stop(true))
      const app = (scenario: string) => apps.get(scenario) as TestApp

      async function listTitle(t: TestApp, user: string) {
        const list = (await (
          await get(t.app, '/backend-api/conversations', { 'x-user-id': user })
        ).json()) as { items: { title: string }[] }
        return list.items[0]?.title
      }

      test('the model writes the title with one short request; stored, listed and streamed alike', async () => {
        const user = newUser()
        const { frames, text } = await sendAndRead(app('good').app, {
          user_id: user,
          messages: [textMessage('I want to visit Kyoto in April. Where should I stay?')],
        })
        expectTitleBeforeEnd(frames)
        expect(titleItems(frames)[0]?.title).toBe(MODEL_TITLE)
        expect(gpt4freeRead(rawFrames(text))).toEqual({
          text: 'Kyoto in spring is lovely.',
          reasoning: '',
          title: MODEL_TITLE,
        })
        expect(await listTitle(app('good'), user)).toBe(MODEL_TITLE)
        const request = fake.titleRequests.findLast((r) => r.scenario === 'good')
        expect(request?.body).toMatchObject({ model: 'gpt-test', stream: false })
        // Asked as the turn starts: from the user's message alone.
        const prompt = JSON.stringify(request?.body.messages)
        expect(prompt).toContain('I want to visit Kyoto in April.')
        expect(prompt).not.toContain('Kyoto in spring')
        // Replayed from the log, the stream carries the model's title too.
        const { token, conversation_id } = dataOf<{ token: string; conversation_id: string }>(
          frames[1],
        )
        const replay = await post(
          app('good').app,
          '/backend-api/f/conversation/resume',
          { conversation_id, offset: 0 },
          { 'x-conduit-token': token },
        )
        expect(await replay.text()).toBe(text)
      })

      test('a list cached before the title was written is invalidated', async () => {
        const user = newUser()
        const t = app('held')
        const response = await post(t.app, SEND, {
          user_id: user,
          messages: [textMessage('where to eat ramen')],
        })
        const body = response.text()
        await fake.asked
        // The title request waits: the list now caches the first message.
        expect(await listTitle(t, user)).toBe('where to eat ramen')
        fake.releaseHeld()
        const frames = framesOf(await body)
        expectTitleBeforeEnd(frames)
        expect(titleItems(frames)[0]?.title).toBe(MODEL_TITLE)
        expect(await listTitle(t, user)).toBe(MODEL_TITLE)
      })

      test('a title longer than 80 characters is cut to 80', async () => {
        const user = newUser()
        const { frames } = await sendAndRead(app('long').app, {
          user_id: user,
          messages: [textMessage('make it long')],
        })
        const title = titleItems(frames)[0]?.title ?? ''
        expect(Array.from(title)).toHaveLength(80)
        expect(title.startsWith('A A A')).toBe(true)
        expect(await listTitle(app('long'), user)).toBe(title)
      })

      test.each(['fails', 'empty', 'garbage'])(
        'when the title request %s, the first message names the conversation and the turn ends normally',
        async (scenario) => {
          const user = newUser()
          const { frames } = await sendAndRead(app(scenario).app, {
            user_id: user,
            messages: [textMessage(`  Fallback   please\n(${scenario})  `)],
          })
          expect(fake.titleRequests.some((r) => r.scenario === scenario)).toBe(true)
          expect(kinds(frames)).not.toContain('error')
          expectTitleBeforeEnd(frames)
          expect(frames.at(-3)?.data).toContain('"finish_details":{"type":"stop"}')
          const expected = `Fallback please (${scenario})`
          expect(titleItems(frames)[0]?.title).toBe(expected)
          expect(await listTitle(app(scenario), user)).toBe(expected)
        },
      )

      test('a title ready before the reply ends streams between its items', async () => {
        const user = newUser()
        const response = await post(app('gated').app, SEND, {
          user_id: user,
          messages: [textMessage('Kyoto in April?')],
        })
        const reader = (response.body as ReadableStream<Uint8Array>).getReader()
        const decoder = new TextDecoder()
        let text = ''
        // The model holds the reply's second half back until the title was read.
        while (!text.includes('"title_generation"')) {
          const { value, done } = await reader.read()
          if (done) throw new Error(`the stream ended without a title: ${text}`)
          text += decoder.decode(value, { stream: true })
        }
        expect(text).not.toContain('is lovely.')
        fake.releaseGate()
        for (let read = await reader.read(); !read.done; read = await reader.read())
          text += decoder.decode(read.value, { stream: true })
        const frames = framesOf(text)
        expectTitleBeforeEnd(frames)
        expect(text.indexOf('"title_generation"')).toBeLessThan(text.indexOf('is lovely.'))
        expect(gpt4freeRead(rawFrames(text))).toEqual({
          text: 'Kyoto in spring is lovely.',
          reasoning: '',
          title: MODEL_TITLE,
        })
        expect(await listTitle(app('gated'), user)).toBe(MODEL_TITLE)
      })

      test('a title model slower than the short wait does not hold the ending: the first message names the conversation', async () => {
        const user = newUser()
        const started = performance.now()
        const { frames, text } = await sendAndRead(app('stalled').app, {
          user_id: user,
          messages: [textMessage('name me in time')],
        })
        // The wait is 300 ms here; the title model never answers.
        expect(performance.now() - started).toBeLessThan(2_300)
        expectTitleBeforeEnd(frames)
        expect(frames.at(-3)?.data).toContain('"finish_details":{"type":"stop"}')
        expect(titleItems(frames)[0]?.title).toBe('name me in time')
        expect(gpt4freeRead(rawFrames(text)).title).toBe('name me in time')
        // Its request is aborted, and its answer never stored.
        await fake.gaveUpOn.stalled
        expect(await listTitle(app('stalled'), user)).toBe('name me in time')
      })

      test('a failed turn ends at once, with the first message as its title', async () => {
        const user = newUser()
        const started = performance.now()
        const { frames } = await sendAndRead(app('broken').app, {
          user_id: user,
          messages: [textMessage('this reply fails')],
        })
        // The ending waits up to 60 s for a title after a normal reply here; never after a failed one.
        expect(performance.now() - started).toBeLessThan(10_000)
        expectTitleBeforeEnd(frames)
        expect(kinds(frames)).toContain('error')
        expect(frames.at(-3)?.data).toContain('"finish_details":{"type":"error"}')
        expect(titleItems(frames)[0]?.title).toBe('this reply fails')
        await fake.gaveUpOn.broken
        expect(await listTitle(app('broken'), user)).toBe('this reply fails')
      })
    })
  })
