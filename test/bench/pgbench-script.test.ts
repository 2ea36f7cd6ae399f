// The pgbench script the harness replays a turn with (bench/harness/pgbench.ts):
// each captured statement becomes one line, so a `--` comment in the service's
// SQL must not swallow the rest of the statement (it once made pgbench fail).
import { expect, test } from 'bun:test'
import { pgbenchScript } from '../../bench/harness/pgbench.ts'

test('a statement with comments becomes one line without them, its parameters inlined', () => {
  const script = pgbenchScript([
    { kind: 'begin' },
    {
      kind: 'query',
      text: `WITH a AS (SELECT $1::text AS x),
       -- a comment, as the service's SQL has
       b AS (SELECT 2 AS y)
       SELECT x, y FROM a, b;`,
      params: ["it's"],
    },
    { kind: 'commit' },
  ])
  expect(script).toBe(
    "BEGIN;\nWITH a AS (SELECT 'it''s'::text AS x), b AS (SELECT 2 AS y) SELECT x, y FROM a, b;\nCOMMIT;\n",
  )
})
