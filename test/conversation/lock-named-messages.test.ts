// lockOwnConversation (sql/conversations-repository.ts) reads the messages a
// send names in the statement that locks the conversation. That statement's
// snapshot is taken before it waits for the lock: a message stored by the
// send holding the lock, committed while this one waited, must still be
// found - on every Db adapter (PGlite runs one transaction at a time, so
// there the second simply starts after the first).
import { describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { lockOwnConversation } from '../../src/conversation/sql/conversations-repository.ts'
import type { Db } from '../../src/storage/db.ts'
import { dbBackends, uniqueName } from '../support/backends.ts'

/** Resolves once a session of `db` waits for a row lock in a statement containing `marker`. */
async function waitingForLock(db: Db, marker: string): Promise<void> {
  for (let tries = 0; tries < 500; tries++) {
    const rows = await db.query(
      `SELECT 1 FROM pg_stat_activity
        WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`,
      [marker],
    )
    if (rows.length > 0) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error('no session waited for the lock')
}

for (const backend of dbBackends()) {
  describe(`lockOwnConversation: ${backend.name}`, () => {
    test('finds a named message committed while it waited for the lock', async () => {
      const db = await backend.open()
      const userId = uniqueName('user')
      const conversationId = randomUUID()
      await db.query('INSERT INTO users (id) VALUES ($1)', [userId])
      await db.query('INSERT INTO conversations (id, user_id, title) VALUES ($1, $2, $3)', [
        conversationId,
        userId,
        'locked',
      ])
      let release = () => {}
      const holding = new Promise<void>((resolve) => {
        release = resolve
      })
      let locked = () => {}
      const isLocked = new Promise<void>((resolve) => {
        locked = resolve
      })
      const first = db.transaction(async (tx) => {
        await lockOwnConversation(tx, conversationId, userId)
        await tx.query(
          `INSERT INTO messages (id, conversation_id, role, content, status)
           VALUES ('named', $1, 'user', '{"content_type":"text","parts":["hi"]}', 'finished_successfully')`,
          [conversationId],
        )
        locked()
        await holding
      })
      await isLocked
      const second = db.transaction((tx) =>
        lockOwnConversation(tx, conversationId, userId, { parent: 'named', answered: 'named' }),
      )
      // On Postgres the second statement is waiting for the first's lock now.
      if (db.kind === 'postgres') await waitingForLock(db, 'FOR UPDATE OF c')
      release()
      await first
      const { named } = await second
      expect(named).toEqual({
        parent: { id: 'named', role: 'user', parentId: null },
        answered: { id: 'named', role: 'user', parentId: null },
      })
    })
  })
}
