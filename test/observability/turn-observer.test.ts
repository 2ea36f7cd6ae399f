// The turn and stream reports of the real service, written by the production
// observer (observability/conversation-observer.ts): one line when a turn
// starts, one when it ends with outcome, items and model latency; a model
// failure at warn with its cause; the turn and stream metrics; no message text.
import { describe, expect, test } from 'bun:test'
import { ModelError, type ModelProvider } from '../../src/conversation/model/provider.ts'
import { conversationObserver } from '../../src/observability/conversation-observer.ts'
import { createMetrics } from '../../src/observability/metrics.ts'
import { type AppBackend, appBackends } from '../support/backends.ts'
import {
  conversationApp,
  dataOf,
  framesOf,
  newUser,
  post,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'
import { type CollectedLog, collectingLogger } from '../support/log-lines.ts'

/** A model that streams two chunks, then fails as a timed-out upstream does. */
const failingModel: ModelProvider = {
  slug: 'failing',
  async *stream() {
    yield 'Half '
    yield 'an answer'
    throw new ModelError('The model did not answer within 1 s.')
  },
}

async function observedApp(backend: AppBackend, model?: ModelProvider) {
  const logged = collectingLogger('info')
  const metrics = createMetrics({ processMetrics: false })
  const t = await conversationApp({
    backend,
    model,
    observer: conversationObserver(logged.log, metrics),
    metrics,
    log: logged.log,
  })
  return { t, logged, metrics }
}

const metricValue = async (
  metric: { get(): Promise<{ values: { value: number; labels: object }[] }> },
  labels: object = {},
) =>
  (await metric.get()).values.find(
    (entry) => JSON.stringify(entry.labels) === JSON.stringify(labels),
  )?.value ?? 0

function turnLines(logged: CollectedLog, messageId: string) {
  return logged.lines.filter((line) => line.message_id === messageId)
}

test('a turn this process did not accept (another instance, a takeover) logs no request_id', () => {
  const logged = collectingLogger('info')
  const observer = conversationObserver(logged.log, createMetrics({ processMetrics: false }))
  const turn = { conversationId: 'c', messageId: 'm', userId: 'u' }
  observer.turnStarted(turn)
  observer.turnStarted({ ...turn, requestId: 'req-1' })
  expect(logged.lines.map((line) => line.request_id)).toEqual([undefined, 'req-1'])
  expect(Object.keys(logged.lines[0] ?? {})).not.toContain('request_id')
})

for (const backend of appBackends())
  describe(backend.name, () => {
    test("a turn's log lines carry the request_id of the send that started it", async () => {
      const { t, logged } = await observedApp(backend)
      const requestId = `send-${crypto.randomUUID()}`
      const response = await post(
        t.app,
        '/backend-api/f/conversation',
        { user_id: newUser(), messages: [textMessage('which request was I?')] },
        { 'x-request-id': requestId },
      )
      // The request log's id (its access line's), echoed to the caller.
      expect(response.headers.get('x-request-id')).toBe(requestId)
      const frames = framesOf(await response.text())
      const messageId = dataOf<{ v: { message: { id: string } } }>(
        frames.find((frame) => frame.data.includes('"o":"add"')),
      ).v.message.id
      await t.conversations.whenIdle()
      const lines = turnLines(logged, messageId)
      expect(lines.map((line) => [line.msg, line.request_id])).toEqual([
        ['turn started', requestId],
        ['turn finished', requestId],
      ])
    })

    test('a turn logs its start and its end with outcome, items and model latency', async () => {
      const { t, logged, metrics } = await observedApp(backend)
      const user = newUser()
      const text = `my-private-words-${user}`
      const { frames } = await sendAndRead(t.app, { user_id: user, messages: [textMessage(text)] })
      const added = dataOf<{ v: { message: { id: string } }; conversation_id?: string }>(
        frames.find((frame) => frame.data.includes('"o":"add"')),
      )
      const messageId = added.v.message.id
      const appends = frames.filter((frame) =>
        frame.data.includes('"p":"/message/content/parts/0","o":"append"'),
      ).length
      const [started, finished] = turnLines(logged, messageId)
      expect(started).toMatchObject({ level: 'info', msg: 'turn started', user_id: user })
      expect(finished).toMatchObject({
        level: 'info',
        msg: 'turn finished',
        outcome: 'stop',
        stored: true,
        items: appends,
        user_id: user,
      })
      expect(appends).toBeGreaterThan(1)
      expect(finished?.model_first_chunk_ms).toBeGreaterThanOrEqual(0)
      expect(finished?.first_item_ms).toBeGreaterThanOrEqual(0)
      expect(finished?.duration_ms).toBeGreaterThanOrEqual(0)
      expect(finished?.conversation_id).toBe(started?.conversation_id)
      expect(logged.raw()).not.toContain(text)

      expect(await metricValue(metrics.turnsStarted)).toBe(1)
      expect(await metricValue(metrics.turnsFinished, { outcome: 'stop' })).toBe(1)
      expect(await metricValue(metrics.streamItems)).toBe(frames.length)
      expect((await metrics.modelFirstChunk.get()).values.length).toBeGreaterThan(0)
      expect((await metrics.timeToFirstItem.get()).values.length).toBeGreaterThan(0)
    })

    test('a model failure is logged at warn with its cause, and counted as an error', async () => {
      const { t, logged, metrics } = await observedApp(backend, failingModel)
      const { frames } = await sendAndRead(t.app, {
        user_id: newUser(),
        messages: [textMessage('hello')],
      })
      expect(frames.some((frame) => frame.data.includes('"type":"error"'))).toBe(true)
      const finished = logged.lines.find((line) => line.msg === 'turn finished')
      expect(finished).toMatchObject({
        level: 'warn',
        outcome: 'error',
        stored: true,
        items: 2,
        error_code: 'model_error',
        cause: 'The model did not answer within 1 s.',
      })
      expect(await metricValue(metrics.turnsFinished, { outcome: 'error' })).toBe(1)
    })

    test('streams are counted while open, and none is left open after [DONE]', async () => {
      const { t, metrics } = await observedApp(backend)
      await Promise.all(
        [1, 2, 3].map(() =>
          sendAndRead(t.app, { user_id: newUser(), messages: [textMessage('count me')] }),
        ),
      )
      await t.conversations.whenIdle()
      expect(await metricValue(metrics.activeStreams)).toBe(0)
      expect(await metricValue(metrics.turnsFinished, { outcome: 'stop' })).toBe(3)
    })
  })
