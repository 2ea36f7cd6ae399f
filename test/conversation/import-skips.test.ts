// An import skips what it cannot read and imports the rest (CONTRACT §23,
// issue #33), with a file shaped like LibreChat's chatgpt.com fixture whose
// second entry lacks `mapping`; and a file of many conversations, stored a
// bounded batch per transaction (§19), is stored whole, once. On every backend.
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describeEachBackend } from '../support/backend-apps.ts'
import { newUser } from '../support/conversation-app.ts'
import { chatgptConversation, detailOf, exported, imported } from '../support/transfer.ts'

const MISSING_MAPPING = readFileSync(
  join(import.meta.dir, '..', 'fixtures', 'chatgpt-missing-mapping.json'),
)
const IDS = {
  sourdough: '7c0e9d36-5a8e-4a8b-9a3c-2b1f0e6d4c21',
  lost: 'b3f1a2c4-1d2e-4f50-8a9b-0c1d2e3f4a5b',
  tides: 'e5d4c3b2-a190-4f8e-9d7c-6b5a49382716',
}

describeEachBackend({}, (t) => {
  describe('a chatgpt.com export with an entry lacking its mapping', () => {
    test('imports the others, and lists that one as skipped with the reason', async () => {
      const user = newUser()
      expect(await imported(t.app, user, MISSING_MAPPING)).toEqual({
        imported: 2,
        skipped: [
          {
            id: IDS.lost,
            index: 1,
            reason: 'The field "[1].mapping" of the file must be an object.',
          },
        ],
      })
      expect((await exported(t.app, user)).map((entry) => entry.id).sort()).toEqual(
        [IDS.sourdough, IDS.tides].sort(),
      )
      const tides = await detailOf(t.app, user, IDS.tides)
      expect(tides.messages.map((message) => message.content.parts)).toEqual([
        ['When is high tide?'],
        ['Twice a day, about 12 h 25 min apart.'],
      ])
      const rows = await t.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM conversations WHERE user_id = $1 AND import_source = $2',
        [user, IDS.lost],
      )
      expect(rows[0]?.n).toBe(0)
    })

    test('importing it again stores nothing new', async () => {
      const user = newUser()
      await imported(t.app, user, MISSING_MAPPING)
      const again = await imported(t.app, user, MISSING_MAPPING)
      expect(again.imported).toBe(0)
      expect(again.skipped.map(({ id, index, reason }) => [id, index, reason])).toEqual([
        [IDS.sourdough, 0, 'already imported'],
        [IDS.lost, 1, 'The field "[1].mapping" of the file must be an object.'],
        [IDS.tides, 2, 'already imported'],
      ])
    })
  })

  test('many conversations, several batches: each stored once, whole, bad ones between them skipped', async () => {
    const user = newUser()
    const good = Array.from({ length: 120 }, (_, index) =>
      chatgptConversation(`many-${user}-${index}`, [
        { id: 'u1', text: `question ${index}` },
        { id: 'a1', text: `answer ${index}` },
      ]),
    )
    const entries: unknown[] = [...good]
    // One unreadable entry in the middle of the third batch, one at the end.
    entries.splice(40, 0, { id: 'broken', mapping: 'none' })
    entries.push({ title: 'no id at all' })
    const report = await imported(t.app, user, JSON.stringify(entries))
    expect(report.imported).toBe(120)
    expect(report.skipped.map(({ id, index }) => [id, index])).toEqual([
      ['broken', 40],
      [null, 121],
    ])
    const rows = await t.db.query<{ conversations: number; messages: number }>(
      `SELECT count(DISTINCT c.id)::int AS conversations, count(m.id)::int AS messages
         FROM conversations c JOIN messages m ON m.conversation_id = c.id WHERE c.user_id = $1`,
      [user],
    )
    expect(rows[0]).toEqual({ conversations: 120, messages: 240 })
    const again = await imported(t.app, user, JSON.stringify(entries))
    expect(again.imported).toBe(0)
    expect(again.skipped.filter((entry) => entry.reason === 'already imported')).toHaveLength(120)
  })
})
