// On real Postgres, with realistic tables (many users, tens of thousands of
// messages) and fresh statistics, the planner itself answers the conversation
// search's exact statement with the trigram index over message text (no
// enable_seqscan tricks), and the statement finds the one matching
// conversation. Needs TEST_DATABASE_URL.
import { beforeAll, describe, expect, test } from 'bun:test'
import { SEARCH_SQL, searchConversations } from '../../src/conversation/sql/search-repository.ts'
import type { Db } from '../../src/storage/db.ts'
import { containsPattern } from '../../src/storage/like-pattern.ts'
import { openPostgresSchema, TEST_DATABASE_URL } from '../support/backends.ts'

const USERS = 200
const CONVERSATIONS_PER_USER = 10
const MESSAGES_PER_CONVERSATION = 20
const SEARCHER = 'user-1'
const NEEDLE = 'zebra-unicorn-quasar'

if (!TEST_DATABASE_URL)
  console.log('search-explain.test.ts skipped: set TEST_DATABASE_URL to run it on real Postgres')

describe.skipIf(!TEST_DATABASE_URL)('conversation search on large tables', () => {
  let db: Db
  let needleConversation: string
  beforeAll(async () => {
    db = await openPostgresSchema(TEST_DATABASE_URL as string)
    await db.exec(`
      INSERT INTO users (id) SELECT 'user-' || u FROM generate_series(1, ${USERS}) AS u;
      INSERT INTO conversations (id, user_id, title, created_at, updated_at)
      SELECT gen_random_uuid(), 'user-' || u, 'Conversation ' || c || ' of ' || u,
             now() - (u * c) * interval '1 minute', now() - (u + c) * interval '1 minute'
        FROM generate_series(1, ${USERS}) AS u, generate_series(1, ${CONVERSATIONS_PER_USER}) AS c;
      INSERT INTO messages (id, conversation_id, role, content, status)
      SELECT 'm' || n, c.id, CASE WHEN n % 2 = 0 THEN 'user' ELSE 'assistant' END,
             jsonb_build_object('content_type', 'text', 'parts',
               jsonb_build_array('Note ' || n || ': ' || md5(c.id::text || n) || ' about ' || md5(n::text))),
             'finished_successfully'
        FROM conversations c, generate_series(1, ${MESSAGES_PER_CONVERSATION}) AS n;
    `)
    const rows = await db.query<{ id: string }>(
      `UPDATE messages SET content = jsonb_build_object('content_type', 'text', 'parts',
              jsonb_build_array('first part', 'and the ${NEEDLE} appears once'))
        WHERE seq = (SELECT min(m.seq) FROM messages m JOIN conversations c ON c.id = m.conversation_id
                      WHERE c.user_id = $1)
        RETURNING conversation_id AS id`,
      [SEARCHER],
    )
    needleConversation = rows[0]?.id ?? ''
    // What autovacuum does after a bulk load: fresh statistics, and the GIN
    // pending list merged. Outside a transaction, so statements of their own.
    await db.exec('VACUUM ANALYZE messages')
    await db.exec('VACUUM ANALYZE conversations')
  }, 120_000)

  test('EXPLAIN shows the trigram index over message text answering the search', async () => {
    const plan = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${SEARCH_SQL}`, [
      SEARCHER,
      containsPattern(NEEDLE.toUpperCase()),
      20,
    ])
    const text = JSON.stringify(plan)
    expect(text).toContain('"Index Name":"messages_text_trgm_idx"')
    expect(text).not.toContain('"Seq Scan"')
  })

  test('and the statement finds the one conversation, across parts, in any case', async () => {
    const rows = await searchConversations(db, SEARCHER, NEEDLE.toUpperCase(), 20)
    expect(rows.map((row) => row.id)).toEqual([needleConversation])
    expect(rows[0]?.messageText).toBe(`first part\nand the ${NEEDLE} appears once`)
    expect(await searchConversations(db, 'user-2', NEEDLE, 20)).toEqual([])
  })
})
