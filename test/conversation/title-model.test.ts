// TITLE_MODEL (CONTRACT §23): the catalogue model it names writes every new
// conversation's title, whichever model writes the reply - also a reply of the
// local model, which writes no titles itself. Against the fake OpenAI server
// (a real process on loopback), which records every request it gets.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationIdOf,
  dataOf,
  type Frame,
  get,
  newUser,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'
import { type FakeOpenAi, type RecordedRequest, startFakeOpenAi } from '../support/fake-openai.ts'

/** What the fake server answers a title request with. */
const FAKE_TITLE = 'A fake title'

let fake: FakeOpenAi

beforeAll(async () => {
  fake = await startFakeOpenAi('slow', { chunkDelayMs: 0 })
}, 30_000)

afterAll(async () => {
  await fake?.stop()
})

const catalogue = () =>
  JSON.stringify([
    { slug: 'chat', provider: 'local', default: true },
    { slug: 'writer', provider: 'openai', model: 'writer-model', base_url: fake.baseUrl },
    { slug: 'namer', provider: 'openai', model: 'namer-model', base_url: fake.baseUrl },
  ])

/** The requests the fake got for the send whose first user message holds `mark`. */
async function requestsWith(mark: string): Promise<RecordedRequest[]> {
  return (await fake.requests()).filter((request) =>
    request.body.messages.some(
      (message) => message.role === 'user' && message.content?.includes(mark),
    ),
  )
}

const titleOf = (frames: Frame[]) =>
  frames
    .filter((frame) => frame.data.startsWith('{"type":"title_generation"'))
    .map((frame) => dataOf<{ title: string }>(frame).title)

describeEachBackend(
  () => ({ env: { MODELS: catalogue(), TITLE_MODEL: 'namer', LOCAL_MODEL_CHUNK_DELAY_MS: '0' } }),
  (t) => {
    afterAll(async () => {
      await t?.conversations.whenIdle()
    })

    async function listTitle(user: string, id: string) {
      const list = (await (
        await get(t.app, '/backend-api/conversations', { 'x-user-id': user })
      ).json()) as { items: { id: string; title: string }[] }
      return list.items.find((item) => item.id === id)?.title
    }

    test('a reply of another model: the titling model names the conversation', async () => {
      const user = newUser()
      const mark = `mark${crypto.randomUUID().slice(0, 8)}`
      const { frames } = await sendAndRead(t.app, {
        user_id: user,
        model: 'writer',
        messages: [textMessage(`Plan a trip ${mark}`)],
      })
      expect(titleOf(frames)).toEqual([FAKE_TITLE])
      expect(await listTitle(user, conversationIdOf(frames))).toBe(FAKE_TITLE)
      const requests = await requestsWith(mark)
      // The reply streamed from `writer`, the title came from `namer`, and nothing else was asked.
      expect(
        requests.map((request) => [request.body.model, request.body.stream === true]).sort(),
      ).toEqual([
        ['namer-model', false],
        ['writer-model', true],
      ])
    })

    test('a reply of the local model, which writes no titles, still gets the titling model’s title', async () => {
      const user = newUser()
      const mark = `mark${crypto.randomUUID().slice(0, 8)}`
      const { frames } = await sendAndRead(t.app, {
        user_id: user,
        model: 'chat',
        messages: [textMessage(`Local question ${mark}`)],
      })
      expect(titleOf(frames)).toEqual([FAKE_TITLE])
      expect(await listTitle(user, conversationIdOf(frames))).toBe(FAKE_TITLE)
      const requests = await requestsWith(mark)
      expect(requests.map((request) => request.body.model)).toEqual(['namer-model'])
      expect(requests[0]?.body.stream).toBe(false)
    })
  },
)
