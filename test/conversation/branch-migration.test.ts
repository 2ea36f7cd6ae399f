// Migration 005_branches (CONTRACT §10): conversations stored before branches
// were linear, so each stored message gets the message stored just before it
// as its parent and each conversation its newest message as current node; the
// detail then reads them as one branch. Run on a database migrated up to 004,
// filled, then migrated to the end, on each database adapter.
import { describe, expect, test } from 'bun:test'
import { loadMigrations, migrate } from '../../src/storage/migrate.ts'
import { dbBackends } from '../support/backends.ts'

/** A new embedded database takes seconds to open on a loaded machine. */
const OPEN_TIMEOUT_MS = 60_000

const ID = {
  long: '00000000-0000-4000-8000-000000000001',
  single: '00000000-0000-4000-8000-000000000002',
  other: '00000000-0000-4000-8000-000000000003',
}

for (const { name, open } of dbBackends())
  describe(name, () => {
    test(
      'gives stored messages their linear parents and conversations their current node',
      async () => {
        const before = (await loadMigrations()).filter((migration) => migration.version < '005')
        const db = await open(before)
        await db.exec(`
        INSERT INTO users (id) VALUES ('old-user');
        INSERT INTO conversations (id, user_id, title) VALUES
          ('${ID.long}', 'old-user', 'long'), ('${ID.single}', 'old-user', 'single'),
          ('${ID.other}', 'old-user', 'other');`)
        // Interleaved across conversations, as concurrent sends store them.
        const rows: [string, string, string][] = [
          [ID.long, 'u1', 'user'],
          [ID.other, 'o1', 'user'],
          [ID.long, 'a1', 'assistant'],
          [ID.other, 'o2', 'assistant'],
          [ID.long, 'u2', 'user'],
          [ID.long, 'u3', 'user'],
          [ID.single, 's1', 'user'],
          [ID.long, 'a2', 'assistant'],
        ]
        for (const [conversation, id, role] of rows)
          await db.query(
            `INSERT INTO messages (id, conversation_id, role, content, status)
           VALUES ($1, $2, $3, '{"content_type":"text","parts":["x"]}', 'finished_successfully')`,
            [id, conversation, role],
          )

        expect(await migrate(db)).toContain('005_branches')

        const parents = await db.query<{ id: string; parent_id: string | null }>(
          'SELECT id, parent_id FROM messages ORDER BY seq',
        )
        expect(parents).toEqual([
          { id: 'u1', parent_id: null },
          { id: 'o1', parent_id: null },
          { id: 'a1', parent_id: 'u1' },
          { id: 'o2', parent_id: 'o1' },
          { id: 'u2', parent_id: 'a1' },
          { id: 'u3', parent_id: 'u2' },
          { id: 's1', parent_id: null },
          { id: 'a2', parent_id: 'u3' },
        ])
        const nodes = await db.query<{ id: string; current_node: string | null }>(
          'SELECT id::text, current_node FROM conversations ORDER BY id',
        )
        expect(nodes).toEqual([
          { id: ID.long, current_node: 'a2' },
          { id: ID.single, current_node: 's1' },
          { id: ID.other, current_node: 'o2' },
        ])
      },
      OPEN_TIMEOUT_MS,
    )

    test(
      'a parent must be a message of the same conversation',
      async () => {
        const db = await open(await loadMigrations())
        await db.exec(`
        INSERT INTO users (id) VALUES ('fk-user');
        INSERT INTO conversations (id, user_id, title) VALUES
          ('${ID.long}', 'fk-user', 'a'), ('${ID.single}', 'fk-user', 'b');
        INSERT INTO messages (id, conversation_id, role, content, status)
          VALUES ('m1', '${ID.long}', 'user', '{}', 'finished_successfully');`)
        const insertUnder = (conversation: string, parent: string) =>
          db.query(
            `INSERT INTO messages (id, conversation_id, parent_id, role, content, status)
           VALUES ('m2', $1, $2, 'user', '{}', 'finished_successfully')`,
            [conversation, parent],
          )
        await expect(insertUnder(ID.single, 'm1')).rejects.toThrow()
        await expect(insertUnder(ID.long, 'missing')).rejects.toThrow()
        await insertUnder(ID.long, 'm1')
        // Deleting a conversation deletes its whole tree.
        await db.query('DELETE FROM conversations WHERE id = $1', [ID.long])
        expect(await db.query('SELECT id FROM messages')).toEqual([])
      },
      OPEN_TIMEOUT_MS,
    )
  })
