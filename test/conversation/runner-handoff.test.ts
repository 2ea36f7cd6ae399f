// A send accepted by one instance while another runs the conversation's turn
// (CONTRACT §13): the accepting instance cannot take the lease, so it leaves
// the turn to the holder, which runs it right after its own - not when a sweep
// finds it. No sweep runs here, so only that hand-off can run the second turn.
import { describe, expect, test } from 'bun:test'
import { suiteApp } from '../support/backend-apps.ts'
import { appBackends } from '../support/backends.ts'
import { newUser, post, textMessage } from '../support/conversation-app.ts'
import { reading } from '../support/server-process.ts'
import { completeFrames, frameData } from '../support/sse-frames.ts'
import { LONG_MESSAGE, slowLocalModel } from '../support/test-models.ts'

const SEND = '/backend-api/f/conversation'

for (const backend of appBackends())
  describe(backend.name, () => {
    // Two instances on one database and one turn state; neither sweeps.
    const model = slowLocalModel(10)
    const holder = suiteApp({ backend, model })
    const other = suiteApp({ backend, model })

    test('a send accepted elsewhere while the lease is held runs right after the running turn', async () => {
      const user = newUser()
      const first = reading(
        await post(holder.app, SEND, { user_id: user, messages: [textMessage(LONG_MESSAGE)] }),
      )
      await first.until((text) => text.includes('"o":"append"'))
      const { conversation_id: cid } = frameData<{ conversation_id: string }>(
        completeFrames(first.text())[1],
      )

      const queued = await post(other.app, SEND, {
        user_id: user,
        conversation_id: cid,
        messages: [textMessage('and then?')],
      })
      expect(queued.status).toBe(200)
      // The other instance could not take the lease: it runs nothing.
      await other.conversations.whenIdle()
      const secondBody = await reading(queued).until(() => false)
      expect(await first.until(() => false)).toEndWith('data: [DONE]\n\n')
      expect(secondBody).toContain('"o":"append"')
      expect(secondBody).toContain('"finish_details":{"type":"stop"}')
      expect(secondBody).toEndWith('data: [DONE]\n\n')
      await holder.conversations.whenIdle()
    })
  })
