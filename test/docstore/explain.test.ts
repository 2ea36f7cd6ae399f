// On real Postgres, with a realistic table and fresh statistics, the planner
// itself chooses the trigram index for POST /query's exact statement (no
// enable_seqscan tricks). Needs TEST_DATABASE_URL.
import { beforeAll, describe, expect, test } from 'bun:test'
import { SEARCH_SQL, searchDocuments } from '../../plugins/docstore/repository.ts'
import type { Db } from '../../src/storage/db.ts'
import { containsPattern } from '../../src/storage/like-pattern.ts'
import { openPostgresSchema, TEST_DATABASE_URL } from '../support/backends.ts'

const ROWS = 20_000
const NEEDLE = 'zebra-unicorn-quasar'

if (!TEST_DATABASE_URL)
  console.log('explain.test.ts skipped: set TEST_DATABASE_URL to run it on real Postgres')

describe.skipIf(!TEST_DATABASE_URL)('POST /query on a large table', () => {
  let db: Db
  beforeAll(async () => {
    db = await openPostgresSchema(TEST_DATABASE_URL as string)
    await db.exec(`
      INSERT INTO documents (content, metadata, content_sha256)
      SELECT content, '{"source":"explain-test"}', encode(sha256(convert_to(content, 'UTF8')), 'hex')
      FROM (
        SELECT 'Note ' || n || ': ' || md5(n::text) || ' about ' || md5((n * 7)::text) AS content
        FROM generate_series(1, ${ROWS}) AS n
      ) AS generated;
      INSERT INTO documents (content, metadata, content_sha256)
      VALUES ('The ${NEEDLE} appears once', '{"source":"explain-test"}',
              encode(sha256(convert_to('The ${NEEDLE} appears once', 'UTF8')), 'hex'));
    `)
    // What autovacuum does after a bulk load: fresh statistics, and the GIN
    // pending list merged (while it is long the planner rightly prices the
    // index high). Outside a transaction, so a statement of its own.
    await db.exec('VACUUM ANALYZE documents')
  }, 60_000)

  test('EXPLAIN shows the trigram index answering the ILIKE', async () => {
    const plan = await db.query<{ 'QUERY PLAN': unknown }>(`EXPLAIN (FORMAT JSON) ${SEARCH_SQL}`, [
      containsPattern(NEEDLE.toUpperCase()),
      5,
    ])
    const text = JSON.stringify(plan)
    expect(text).toContain('documents_content_trgm_idx')
    expect(text).not.toContain('"Seq Scan"')
  })

  test('and the query finds the one row', async () => {
    const rows = await searchDocuments(db, containsPattern(NEEDLE.toUpperCase()), 5)
    expect(rows.map((row) => row.content)).toEqual([`The ${NEEDLE} appears once`])
  })
})
