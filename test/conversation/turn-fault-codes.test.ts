import { expect, test } from 'bun:test'
import type { Db } from '../../src/storage/db.ts'
import { describeEachBackend } from '../support/backend-apps.ts'
import { dataOf, newUser, sendAndRead, textMessage } from '../support/conversation-app.ts'

// A turn that fails names what failed (CONTRACT §19): a database read of the
// turn that loses its connection (a bare socket error, ECONNRESET, as
// postgres.js gives it) ends the stream with `storage_unavailable`, never
// with the turn state's `state_unavailable` - though Redis reports its own
// socket errors with the same code.

/** `db` whose reads of the users' instructions fail as a lost connection does. */
function droppingInstructionReads(db: Db): Db {
  const reset = () => Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })
  return {
    ...db,
    query: (text, params) =>
      text.includes('user_system_messages') ? Promise.reject(reset()) : db.query(text, params),
  }
}

describeEachBackend(
  async (backend) => ({ db: droppingInstructionReads(await backend.db()) }),
  (t) => {
    test('a database read that loses its connection mid-turn ends the stream as storage_unavailable', async () => {
      const { response, frames } = await sendAndRead(t.app, {
        user_id: newUser(),
        messages: [textMessage('is the database there?')],
      })
      expect(response.status).toBe(200)
      const error = frames.find((frame) => frame.data.includes('"type":"error"'))
      expect(dataOf(error)).toMatchObject({ type: 'error', code: 'storage_unavailable' })
      expect(frames.at(-1)?.data).toBe('[DONE]')
      await t.conversations.whenIdle()
    })
  },
)
