// The Db port contract, run unchanged over every adapter in dbBackends()
// (embedded PGlite always, real Postgres when TEST_DATABASE_URL is set):
// parameters, type mapping, transactions, SQLSTATE codes, exec, ping, and the
// migrations (what they record and the schema they leave behind).
import { beforeAll, describe, expect, test } from 'bun:test'
import { randomUUID } from 'node:crypto'
import { join } from 'node:path'
import { type Db, sqlState, UNIQUE_VIOLATION } from '../../src/storage/db.ts'
import { loadMigrations, migrate } from '../../src/storage/migrate.ts'
import { createPgliteDb } from '../../src/storage/pglite.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { STARTED_LATE, STATEMENT_DEADLINE } from '../../src/storage/statement-deadline.ts'
import { dbBackends, TEST_DATABASE_URL, uniqueName } from '../support/backends.ts'

const FOREIGN_KEY_VIOLATION = '23503'
const HOSTILE = `'); DROP TABLE users; --`
const MIGRATIONS_DIR = join(import.meta.dir, '../../src/storage/migrations')

/** The error a promise rejects with; fails the test when it resolves. */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected the statement to fail, but it succeeded')
}

/**
 * A database of the same kind with nothing in it yet (not migrated), and how
 * to dispose of it: a fresh in-memory PGlite, or a fresh schema on Postgres.
 */
async function openEmpty(kind: Db['kind']): Promise<{ db: Db; dispose: () => Promise<void> }> {
  if (kind === 'embedded') {
    const db = await createPgliteDb()
    return { db, dispose: () => db.close() }
  }
  const url = TEST_DATABASE_URL
  if (!url) throw new Error('a postgres backend needs TEST_DATABASE_URL')
  const schema = uniqueName('empty')
  const admin = createPostgresDb(url, { max: 1 })
  await admin.exec(`CREATE SCHEMA ${schema}`)
  const db = createPostgresDb(url, { schema, max: 2 })
  return {
    db,
    dispose: async () => {
      await db.close()
      await admin.exec(`DROP SCHEMA ${schema} CASCADE`)
      await admin.close()
    },
  }
}

for (const backend of dbBackends()) {
  describe(`Db contract: ${backend.name}`, () => {
    let db: Db

    // A first PGlite open takes seconds, more on a busy machine: past the hook default.
    beforeAll(async () => {
      db = await backend.open()
    }, 60_000)

    async function insertUser(id: string, name: string | null = null) {
      await db.query('INSERT INTO users (id, name) VALUES ($1, $2)', [id, name])
    }

    async function insertConversation(userId: string): Promise<string> {
      const id = randomUUID()
      await db.query('INSERT INTO conversations (id, user_id, title) VALUES ($1, $2, $3)', [
        id,
        userId,
        'a title',
      ])
      return id
    }

    test('kind names the adapter', () => {
      expect(db.kind).toBe(backend.name === 'pglite' ? 'embedded' : 'postgres')
    })

    test('query with parameters returns the matching rows', async () => {
      const a = uniqueName('user')
      const b = uniqueName('user')
      await insertUser(a, 'Ada')
      await insertUser(b, 'Bob')
      const rows = await db.query<{ id: string; name: string }>(
        'SELECT id, name FROM users WHERE id = ANY($1::text[]) ORDER BY name',
        [[a, b]],
      )
      expect(rows).toEqual([
        { id: a, name: 'Ada' },
        { id: b, name: 'Bob' },
      ])
      const one = await db.query('SELECT name FROM users WHERE id = $1 AND name = $2', [a, 'Bob'])
      expect(one).toEqual([])
    })

    test('parameters are sent as data, never spliced into the SQL', async () => {
      const id = uniqueName('user')
      await insertUser(id, HOSTILE)
      const [row] = await db.query<{ name: string }>('SELECT name FROM users WHERE id = $1', [id])
      expect(row?.name).toBe(HOSTILE)
      const [echo] = await db.query<{ v: string }>('SELECT $1::text AS v', [HOSTILE])
      expect(echo?.v).toBe(HOSTILE)
      // The table is still there and still holds the row.
      const [count] = await db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM users WHERE id = $1',
        [id],
      )
      expect(count?.n).toBe(1)
    })

    test('timestamptz comes back as a Date, jsonb as a parsed value', async () => {
      const at = new Date('2024-05-06T07:08:09.123Z')
      // JSON goes in as text cast to jsonb (db.ts): the same on both adapters.
      const [row] = await db.query<{ t: unknown; j: unknown; n: unknown; kind: unknown }>(
        `SELECT $1::timestamptz AS t, $2::text::jsonb AS j, '{"x":[1,"two",null]}'::jsonb AS n,
                jsonb_typeof($2::text::jsonb) AS kind`,
        [at.toISOString(), JSON.stringify({ parts: ['a', 'b'], nested: { ok: true } })],
      )
      expect(row?.t).toBeInstanceOf(Date)
      expect(row?.t).toEqual(at)
      expect(row?.j).toEqual({ parts: ['a', 'b'], nested: { ok: true } })
      expect(row?.n).toEqual({ x: [1, 'two', null] })
      expect(row?.kind).toBe('object')

      const userId = uniqueName('user')
      await insertUser(userId)
      const [user] = await db.query<{ created_at: unknown }>(
        'SELECT created_at FROM users WHERE id = $1',
        [userId],
      )
      expect(user?.created_at).toBeInstanceOf(Date)
    })

    test('a transaction commits when its function resolves', async () => {
      const id = uniqueName('user')
      const result = await db.transaction(async (tx) => {
        await tx.query('INSERT INTO users (id) VALUES ($1)', [id])
        const seen = await tx.query('SELECT id FROM users WHERE id = $1', [id])
        return seen.length
      })
      expect(result).toBe(1)
      expect(await db.query('SELECT id FROM users WHERE id = $1', [id])).toEqual([{ id }])
    })

    test('a transaction rolls back when its function throws', async () => {
      const id = uniqueName('user')
      const failure = new Error('abort this transaction')
      const error = await rejection(
        db.transaction(async (tx) => {
          await tx.query('INSERT INTO users (id) VALUES ($1)', [id])
          await tx.exec(`UPDATE users SET name = 'changed' WHERE id = '${id}'`)
          expect(await tx.query('SELECT id FROM users WHERE id = $1', [id])).toHaveLength(1)
          throw failure
        }),
      )
      expect(error).toBe(failure)
      expect(await db.query('SELECT id FROM users WHERE id = $1', [id])).toEqual([])
    })

    test('a failing statement inside a transaction rolls back the earlier ones', async () => {
      const id = uniqueName('user')
      const error = await rejection(
        db.transaction(async (tx) => {
          await tx.query('INSERT INTO users (id) VALUES ($1)', [id])
          await tx.query('INSERT INTO users (id) VALUES ($1)', [id])
        }),
      )
      expect(sqlState(error)).toBe(UNIQUE_VIOLATION)
      expect(await db.query('SELECT id FROM users WHERE id = $1', [id])).toEqual([])
    })

    test('a unique violation surfaces with SQLSTATE 23505', async () => {
      const id = uniqueName('user')
      await insertUser(id)
      const error = await rejection(insertUser(id))
      expect(UNIQUE_VIOLATION).toBe('23505')
      expect(sqlState(error)).toBe(UNIQUE_VIOLATION)
    })

    test('a statement asking for its deadline takes effect when started in time', async () => {
      const id = uniqueName('user')
      await db.query('INSERT INTO users (id) SELECT $1 WHERE conduit_before($2)', [
        id,
        STATEMENT_DEADLINE,
      ])
      expect(await db.query('SELECT id FROM users WHERE id = $1', [id])).toEqual([{ id }])
    })

    test('a statement started past its deadline fails whole with SQLSTATE CD001 and stores nothing', async () => {
      const id = uniqueName('user')
      // A deadline long gone, as the server of a statement it held while frozen sees it.
      const error = await rejection(
        db.query(
          `WITH added AS (INSERT INTO users (id) VALUES ($1))
           SELECT 1 AS n WHERE conduit_before($2)`,
          [id, 0],
        ),
      )
      expect(sqlState(error)).toBe(STARTED_LATE)
      expect(await db.query('SELECT id FROM users WHERE id = $1', [id])).toEqual([])
    })

    test('exec runs several statements', async () => {
      const table = uniqueName('exec')
      await db.exec(`
        CREATE TABLE ${table} (n int NOT NULL);
        INSERT INTO ${table} (n) VALUES (1);
        INSERT INTO ${table} (n) VALUES (2), (3);
      `)
      const rows = await db.query<{ n: number }>(`SELECT n FROM ${table} ORDER BY n`)
      expect(rows.map((row) => row.n)).toEqual([1, 2, 3])
      await db.exec(`DROP TABLE ${table}`)
    })

    test('ping resolves while the database answers', async () => {
      await expect(db.ping()).resolves.toBeUndefined()
    })

    test('schema_migrations records every shipped migration, and migrate() then applies nothing', async () => {
      const shipped = (await loadMigrations()).map((migration) => migration.version)
      expect(shipped).toContain('001_conversations')
      expect(shipped).toContain('002_documents')
      const recorded = await db.query<{ version: string; applied_at: unknown }>(
        'SELECT version, applied_at FROM schema_migrations ORDER BY version',
      )
      expect(recorded.map((row) => row.version)).toEqual(shipped)
      for (const row of recorded) expect(row.applied_at).toBeInstanceOf(Date)
      expect(await migrate(db)).toEqual([])
    })

    test('migrate() applies every migration on an empty database, then nothing', async () => {
      const shipped = (await loadMigrations()).map((migration) => migration.version)
      const empty = await openEmpty(db.kind)
      try {
        expect(await migrate(empty.db)).toEqual(shipped)
        expect(await migrate(empty.db)).toEqual([])
        const recorded = await empty.db.query<{ version: string }>(
          'SELECT version FROM schema_migrations ORDER BY version',
        )
        expect(recorded.map((row) => row.version)).toEqual(shipped)
      } finally {
        await empty.dispose()
      }
    }, 60_000)

    test('migrate() applies only the migrations it has not recorded, in order', async () => {
      const first = uniqueName('901_extra')
      const second = uniqueName('902_extra')
      const table = uniqueName('extra')
      const extra = [
        { version: first, sql: `CREATE TABLE ${table} (n int)` },
        { version: second, sql: `INSERT INTO ${table} (n) VALUES (1)` },
      ]
      expect(await migrate(db, extra.slice(0, 1))).toEqual([first])
      expect(await migrate(db, extra)).toEqual([second])
      expect(await migrate(db, extra)).toEqual([])
      expect(await db.query(`SELECT n FROM ${table}`)).toEqual([{ n: 1 }])
      await db.exec(`DROP TABLE ${table}`)
      await db.query('DELETE FROM schema_migrations WHERE version = ANY($1::text[])', [
        [first, second],
      ])
    })

    test('a migration that fails records nothing and leaves no trace', async () => {
      const version = uniqueName('903_broken')
      const table = uniqueName('broken')
      const broken = [
        { version, sql: `CREATE TABLE ${table} (n int); SELECT * FROM no_such_table` },
      ]
      await rejection(migrate(db, broken))
      expect(
        await db.query('SELECT version FROM schema_migrations WHERE version = $1', [version]),
      ).toEqual([])
      expect(
        await db.query(
          'SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1',
          [table],
        ),
      ).toEqual([])
    })

    test('the tables users, conversations and messages exist', async () => {
      const rows = await db.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables
         WHERE table_schema = current_schema() AND table_name = ANY($1::text[])
         ORDER BY table_name`,
        [['users', 'conversations', 'messages']],
      )
      expect(rows.map((row) => row.table_name)).toEqual(['conversations', 'messages', 'users'])
    })

    test('a message for a missing conversation violates its foreign key (23503)', async () => {
      const error = await rejection(
        db.query(
          `INSERT INTO messages (id, conversation_id, role, content, status)
           VALUES ($1, $2, 'user', $3::text::jsonb, 'finished_successfully')`,
          [uniqueName('msg'), randomUUID(), JSON.stringify({ content_type: 'text', parts: ['x'] })],
        ),
      )
      expect(sqlState(error)).toBe(FOREIGN_KEY_VIOLATION)
    })

    test('a conversation for a missing user violates its foreign key (23503)', async () => {
      const error = await rejection(insertConversation(uniqueName('ghost')))
      expect(sqlState(error)).toBe(FOREIGN_KEY_VIOLATION)
    })

    test('messages store jsonb content and refuse a message id twice in one conversation', async () => {
      const userId = uniqueName('user')
      await insertUser(userId)
      const conversationId = await insertConversation(userId)
      const content = { content_type: 'text', parts: ['hello', HOSTILE] }
      const insert = (id: string) =>
        db.query(
          `INSERT INTO messages (id, conversation_id, role, content, status)
           VALUES ($1, $2, 'user', $3::text::jsonb, 'finished_successfully')`,
          [id, conversationId, JSON.stringify(content)],
        )
      await insert('m1')
      const error = await rejection(insert('m1'))
      expect(sqlState(error)).toBe(UNIQUE_VIOLATION)
      const rows = await db.query<{ content: unknown; kind: string; created_at: unknown }>(
        `SELECT content, jsonb_typeof(content) AS kind, created_at
         FROM messages WHERE conversation_id = $1`,
        [conversationId],
      )
      expect(rows).toHaveLength(1)
      expect(rows[0]?.content).toEqual(content)
      expect(rows[0]?.kind).toBe('object')
      expect(rows[0]?.created_at).toBeInstanceOf(Date)
    })

    test('deleting a user cascades to its conversations and messages', async () => {
      const userId = uniqueName('user')
      await insertUser(userId)
      const conversationId = await insertConversation(userId)
      await db.query(
        `INSERT INTO messages (id, conversation_id, role, content, status)
         VALUES ('m1', $1, 'user', '{}'::jsonb, 'finished_successfully')`,
        [conversationId],
      )
      await db.query('DELETE FROM users WHERE id = $1', [userId])
      expect(
        await db.query('SELECT id FROM conversations WHERE id = $1', [conversationId]),
      ).toEqual([])
      expect(
        await db.query('SELECT id FROM messages WHERE conversation_id = $1', [conversationId]),
      ).toEqual([])
    })

    test('the indexes named in 001_conversations.sql exist', async () => {
      const sql = await Bun.file(join(MIGRATIONS_DIR, '001_conversations.sql')).text()
      const named = [...sql.matchAll(/CREATE\s+INDEX\s+(\w+)/gi)].map((match) => match[1] ?? '')
      expect(named.sort()).toEqual([
        'conversations_user_created_idx',
        'conversations_user_updated_idx',
        'messages_conversation_seq_idx',
      ])
      const rows = await db.query<{ indexname: string; tablename: string }>(
        `SELECT indexname, tablename FROM pg_indexes
         WHERE schemaname = current_schema() AND indexname = ANY($1::text[])
         ORDER BY indexname`,
        [named],
      )
      expect(rows).toEqual([
        { indexname: 'conversations_user_created_idx', tablename: 'conversations' },
        { indexname: 'conversations_user_updated_idx', tablename: 'conversations' },
        { indexname: 'messages_conversation_seq_idx', tablename: 'messages' },
      ])
    })
  })
}
