// A send queued behind a running turn (CONTRACT §4.1, §12): its response
// starts at once - headers and its first items (token, input message, the
// assistant message) while the turn ahead still runs - and pings keep it open
// until its own turn runs; then it streams its reply to the end.
import { expect, test } from 'bun:test'
import { describeEachBackend } from '../support/backend-apps.ts'
import { get, newUser, post, textMessage } from '../support/conversation-app.ts'
import { reading } from '../support/server-process.ts'
import { completeFrames, frameData } from '../support/sse-frames.ts'
import { LONG_MESSAGE, slowLocalModel } from '../support/test-models.ts'

const SEND = '/backend-api/f/conversation'

describeEachBackend({ model: slowLocalModel(), env: { SSE_KEEPALIVE_MS: '20' } }, (t) => {
  test('a queued send gets its first items and pings while the turn ahead runs', async () => {
    const user = newUser()
    const first = reading(
      await post(t.app, SEND, { user_id: user, messages: [textMessage(LONG_MESSAGE)] }),
    )
    await first.until((text) => text.includes('"o":"append"'))
    const frames = completeFrames(first.text())
    const { conversation_id: cid } = frameData<{ conversation_id: string }>(frames[1])
    const runningId = frameData<{ v: { message: { id: string } } }>(frames[3]).v.message.id

    const queued = await post(t.app, SEND, {
      user_id: user,
      conversation_id: cid,
      messages: [textMessage('and then?')],
    })
    expect(queued.status).toBe(200)
    const second = reading(queued)
    // Its four first items and a ping, while the first turn is still the one streaming.
    await second.until((text) => completeFrames(text).length >= 4 && text.includes(': ping'))
    const status = await get(t.app, `/backend-api/conversation/${cid}/stream_status`, {
      'x-user-id': user,
    })
    expect(await status.json()).toMatchObject({ streaming: true, message_id: runningId })
    expect(second.text()).not.toContain('"o":"append"')

    const firstBody = await first.until(() => false)
    const secondBody = await second.until(() => false)
    expect(firstBody).toEndWith('data: [DONE]\n\n')
    expect(secondBody).toEndWith('data: [DONE]\n\n')
    expect(secondBody).toContain('"finish_details":{"type":"stop"}')
  })
})
