// Db adapter for embedded Postgres (PGlite): in a data directory, or in memory.
// PGlite runs one query at a time; it queues concurrent callers itself.
// ping() answers from a check made within the last PING_REUSE_MS: a query costs
// the server thread ~300 µs of WASM here (it is in-process), and GET /health
// must not queue behind other queries or load the one thread doing them.
import { PGlite, type Transaction } from '@electric-sql/pglite'
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm'
import type { Db, Queryable, Row } from './db.ts'
import { asksForDeadline, NO_DEADLINE, withDeadlineParameter } from './statement-deadline.ts'

function queryable(target: PGlite | Transaction): Queryable {
  return {
    async query<T extends Row = Row>(text: string, params: readonly unknown[] = []) {
      // No deadlines here: a statement asking for one always has time.
      const sent = asksForDeadline(params) ? withDeadlineParameter(params, NO_DEADLINE) : params
      const result = await target.query<T>(text, sent as unknown[])
      return result.rows
    },
    async exec(script: string) {
      await target.exec(script)
    },
  }
}

/** How long a successful ping is taken as the answer to the next ones. */
export const PING_REUSE_MS = 1_000

/** Opens PGlite in dataDir, or in memory when dataDir is undefined. */
export async function createPgliteDb(dataDir?: string): Promise<Db> {
  // 'memory://' rather than undefined: PGlite loads extensions only with a data dir.
  const pg = new PGlite(dataDir ?? 'memory://', { extensions: { pg_trgm } })
  await pg.waitReady
  const base = queryable(pg)
  let lastAnswer = Number.NEGATIVE_INFINITY
  let inFlight: Promise<void> | undefined
  const check = async () => {
    await pg.query('select 1')
    lastAnswer = performance.now()
  }
  return {
    kind: 'embedded',
    query: base.query,
    exec: base.exec,
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      pg.transaction((tx) => fn(queryable(tx))),
    async ping() {
      if (pg.closed) throw new Error('the embedded database is closed')
      if (performance.now() - lastAnswer < PING_REUSE_MS) return
      inFlight ??= check().finally(() => {
        inFlight = undefined
      })
      await inFlight
    },
    async close() {
      if (!pg.closed) await pg.close()
    },
  }
}
