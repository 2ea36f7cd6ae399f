// Migration 007_models_and_instructions (CONTRACT §15-§16): a conversation
// stored before models were chosen per conversation gets, as its model, the
// model that wrote its current reply (none without one); the custom
// instructions table refuses texts over 1,500 characters and goes with its
// user. Run on a database migrated up to 005, filled, then migrated to the
// end, on each database adapter.
import { describe, expect, test } from 'bun:test'
import { loadMigrations, migrate } from '../../src/storage/migrate.ts'
import { dbBackends } from '../support/backends.ts'

const OPEN_TIMEOUT_MS = 60_000
const WITH_REPLY = '00000000-0000-4000-8000-000000000011'
const WITHOUT = '00000000-0000-4000-8000-000000000012'

for (const { name, open } of dbBackends())
  describe(name, () => {
    test(
      'stored conversations take the model of their current reply; instructions are bounded',
      async () => {
        const before = (await loadMigrations()).filter((migration) => migration.version < '007')
        const db = await open(before)
        await db.exec(`
        INSERT INTO users (id) VALUES ('old-user');
        INSERT INTO conversations (id, user_id, title, current_node) VALUES
          ('${WITH_REPLY}', 'old-user', 'replied', 'a1'), ('${WITHOUT}', 'old-user', 'none', NULL);
        INSERT INTO messages (id, conversation_id, role, content, status, metadata) VALUES
          ('u1', '${WITH_REPLY}', 'user', '{"content_type":"text","parts":["x"]}', 'finished_successfully', '{}'),
          ('a1', '${WITH_REPLY}', 'assistant', '{"content_type":"text","parts":["y"]}', 'finished_successfully',
           '{"model_slug":"gpt-4o-mini","parent_id":"u1"}');`)

        expect(await migrate(db)).toContain('007_models_and_instructions')

        const slugs = await db.query<{ id: string; default_model_slug: string | null }>(
          'SELECT id, default_model_slug FROM conversations ORDER BY id',
        )
        expect(slugs).toEqual([
          { id: WITH_REPLY, default_model_slug: 'gpt-4o-mini' },
          { id: WITHOUT, default_model_slug: null },
        ])

        await db.query(
          `INSERT INTO user_system_messages (user_id, enabled, about_user_message) VALUES ($1, true, $2)`,
          ['old-user', '🐳'.repeat(1500)],
        )
        await expect(
          db.query(`UPDATE user_system_messages SET about_model_message = $2 WHERE user_id = $1`, [
            'old-user',
            'x'.repeat(1501),
          ]),
        ).rejects.toThrow()
        await db.query(`DELETE FROM users WHERE id = 'old-user'`)
        expect(await db.query('SELECT user_id FROM user_system_messages')).toEqual([])
      },
      OPEN_TIMEOUT_MS,
    )
  })
