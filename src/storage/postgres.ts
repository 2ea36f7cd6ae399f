// Db adapter for a real Postgres server, through postgres.js.
import postgres from 'postgres'
import type { Db, Queryable, Row } from './db.ts'

export interface PostgresOptions {
  /** Pool size. */
  max?: number
  /** Schema to work in (tests use a fresh one per run); `public` stays visible after it. */
  schema?: string
}

type Sql = postgres.Sql | postgres.TransactionSql

function queryable(sql: Sql): Queryable {
  return {
    async query<T extends Row = Row>(text: string, params: readonly unknown[] = []) {
      // postgres.js types parameters loosely; values are still sent separately from the text.
      // Prepared (named, once per connection): unsafe() defaults to parsing and
      // planning each statement anew, a third of Postgres's CPU on a turn.
      return (await sql.unsafe(text, params as postgres.ParameterOrJSON<never>[], {
        prepare: true,
      })) as unknown as T[]
    },
    async exec(script: string) {
      await sql.unsafe(script)
    },
  }
}

/** Connects to `url`; the pool opens connections lazily. */
export function createPostgresDb(url: string, options: PostgresOptions = {}): Db {
  const sql = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connect_timeout: 5,
    connection: options.schema ? { search_path: `${options.schema},public` } : {},
  })
  const base = queryable(sql)
  return {
    kind: 'postgres',
    query: base.query,
    exec: base.exec,
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      sql.begin((tx) => fn(queryable(tx))) as Promise<T>,
    async ping() {
      await sql`select 1`
    },
    async close() {
      await sql.end({ timeout: 5 })
    },
  }
}
