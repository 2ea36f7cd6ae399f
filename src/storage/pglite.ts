// Db adapter for embedded Postgres (PGlite): in a data directory, or in memory.
// PGlite runs one query at a time; it queues concurrent callers itself.
import { PGlite, type Transaction } from '@electric-sql/pglite'
import { pg_trgm } from '@electric-sql/pglite/contrib/pg_trgm'
import type { Db, Queryable, Row } from './db.ts'

function queryable(target: PGlite | Transaction): Queryable {
  return {
    async query<T extends Row = Row>(text: string, params: readonly unknown[] = []) {
      const result = await target.query<T>(text, params as unknown[])
      return result.rows
    },
    async exec(script: string) {
      await target.exec(script)
    },
  }
}

/** Opens PGlite in dataDir, or in memory when dataDir is undefined. */
export async function createPgliteDb(dataDir?: string): Promise<Db> {
  // 'memory://' rather than undefined: PGlite loads extensions only with a data dir.
  const pg = new PGlite(dataDir ?? 'memory://', { extensions: { pg_trgm } })
  await pg.waitReady
  const base = queryable(pg)
  return {
    kind: 'embedded',
    query: base.query,
    exec: base.exec,
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      pg.transaction((tx) => fn(queryable(tx))),
    async ping() {
      await pg.query('select 1')
    },
    async close() {
      if (!pg.closed) await pg.close()
    },
  }
}
