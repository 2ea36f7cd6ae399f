// A model server is input like any other (CONTRACT §3): one that streams a NUL
// character and lone surrogates, which no Postgres text or jsonb column holds
// as they are, and titles with a NUL, against a fake OpenAI-compatible server
// running as a real process on loopback, on every backend. The reply streams
// to [DONE] and is stored exactly as it streamed, each such character as
// U+FFFD, an emoji cut between two chunks whole; the title is stored too.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { modelEvents } from '../../src/conversation/model/model-events.ts'
import { toStorableText } from '../../src/storable-text.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationIdOf,
  get,
  newUser,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'
import { type FakeOpenAi, startFakeOpenAi } from '../support/fake-openai.ts'
import { appendedChunks } from '../support/server-process.ts'

let fake: FakeOpenAi
beforeAll(async () => {
  fake = await startFakeOpenAi('slow', { chunkDelayMs: 1 })
}, 30_000)
afterAll(async () => {
  await fake?.stop()
})

/** HOSTILE_PIECES of fake-openai-server.ts, as they can be stored and shown. */
const STORED = 'NUL:\uFFFD lone:\uFFFD low:\uFFFD party:🎉 end.'

describeEachBackend(
  () => ({
    env: {
      MODELS: JSON.stringify([
        { slug: 'hostile', provider: 'openai', model: 'hostile', base_url: fake.baseUrl },
      ]),
    },
  }),
  (t) => {
    test('its reply streams and is stored with U+FFFD in place of what no column holds', async () => {
      const user = newUser()
      const { response, frames, text } = await sendAndRead(t.app, {
        user_id: user,
        messages: [textMessage('say something odd')],
      })
      expect(response.status).toBe(200)
      expect(text).toEndWith('data: [DONE]\n\n')
      expect(text).toContain('"finish_details":{"type":"stop"}')
      expect(appendedChunks(text).join('')).toBe(STORED)
      await t.conversations.whenIdle()
      const id = conversationIdOf(frames)
      const detail = (await (
        await get(t.app, `/backend-api/conversation/${id}`, { 'x-user-id': user })
      ).json()) as { title: string; messages: { role: string; content: { parts: string[] } }[] }
      expect(detail.messages.at(-1)?.content.parts.join('')).toBe(STORED)
      expect(detail.title).toBe('A\uFFFD title')
    })
  },
)

async function* fromArray(chunks: string[]) {
  yield* chunks
}
/** What a text-only model's chunks become as the turn reads them (model-events.ts). */
const collect = async (chunks: string[]) =>
  (
    await Array.fromAsync(
      modelEvents({ slug: 'chunks', stream: () => fromArray(chunks) }, { messages: [] }),
    )
  ).map((event) => (event.type === 'text' ? event.text : ''))

test("a text-only model's chunks keep a pair cut between chunks, replace what is lone, none empty", async () => {
  expect(await collect(['a\ud83c', '\udf89b'])).toEqual(['a', '🎉b'])
  expect(await collect(['\ud83c', '\udf89'])).toEqual(['🎉'])
  expect(await collect(['x\ud83c', 'y'])).toEqual(['x', '\uFFFDy'])
  expect(await collect(['end\ud83c'])).toEqual(['end', '\uFFFD'])
  expect(await collect(['\u0000', '\udc00', 'ok'])).toEqual(['\uFFFD', '\uFFFD', 'ok'])
  expect(await collect(['plain', ' text'])).toEqual(['plain', ' text'])
  expect(toStorableText('a\u0000b\ud800c')).toBe('a\uFFFDb\uFFFDc')
})
