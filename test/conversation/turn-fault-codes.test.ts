import { expect, test } from 'bun:test'
import type { Db } from '../../src/storage/db.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import {
  conversationIdOf,
  dataOf,
  get,
  newUser,
  sendAndRead,
  textMessage,
} from '../support/conversation-app.ts'

// A turn that fails names what failed (CONTRACT §19): a database read of the
// turn that loses its connection (a bare socket error, ECONNRESET, as
// postgres.js gives it) ends the stream with `storage_unavailable`, never
// with the turn state's `state_unavailable` - though Redis reports its own
// socket errors with the same code. The read is a regenerated reply's
// context (its branch, read from the database once the turn runs).

/** `db` whose reads of a branch fail as a lost connection does while `dropping.on`. */
function droppingBranchReads(db: Db, dropping: { on: boolean }): Db {
  const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })
  return {
    ...db,
    query: (text, params) =>
      dropping.on && text.includes('WITH RECURSIVE branch')
        ? Promise.reject(reset())
        : db.query(text, params),
  }
}

const dropping = { on: false }

describeEachBackend(
  async (backend) => ({ db: droppingBranchReads(await backend.db(), dropping) }),
  (t) => {
    test('a database read that loses its connection mid-turn ends the stream as storage_unavailable', async () => {
      const user = newUser()
      const first = await sendAndRead(t.app, {
        user_id: user,
        messages: [textMessage('is the database there?', 'q1')],
      })
      const conversationId = conversationIdOf(first.frames)
      await t.conversations.whenIdle()
      const detail = await get(t.app, `/backend-api/conversation/${conversationId}`, {
        'x-user-id': user,
      })
      const firstReply = ((await detail.json()) as { current_node: string }).current_node
      const second = await sendAndRead(t.app, {
        user_id: user,
        conversation_id: conversationId,
        messages: [textMessage('still there?', 'q2')],
      })
      expect([first.response.status, second.response.status]).toEqual([200, 200])
      await t.conversations.whenIdle()
      // Regenerating the second reply reads its branch from the database.
      dropping.on = true
      const { response, frames } = await sendAndRead(t.app, {
        user_id: user,
        conversation_id: conversationId,
        action: 'variant',
        parent_message_id: firstReply,
        messages: [textMessage('still there?', 'q2')],
      }).finally(() => {
        dropping.on = false
      })
      expect(response.status).toBe(200)
      const error = frames.find((frame) => frame.data.includes('"type":"error"'))
      expect(dataOf(error)).toMatchObject({ type: 'error', code: 'storage_unavailable' })
      expect(frames.at(-1)?.data).toBe('[DONE]')
      await t.conversations.whenIdle()
    })
  },
)
