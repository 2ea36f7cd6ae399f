// The Db port: parameterized SQL ($1, $2, …) and transactions. Adapters run the
// same SQL text: postgres.ts (postgres.js) and pglite.ts (embedded PGlite).

export type Row = Record<string, unknown>

/** Something SQL can be sent to: the pool itself, or an open transaction. */
export interface Queryable {
  /**
   * Runs one statement and returns its rows. Parameters are sent separately,
   * never spliced into the text. `timestamptz` columns come back as Date,
   * `jsonb` as parsed values; cast `bigint` results to `int` in SQL. Send JSON
   * as text cast with `$1::text::jsonb`: postgres.js would encode a string
   * sent to a bare `$1::jsonb` as a JSON string.
   */
  query<T extends Row = Row>(text: string, params?: readonly unknown[]): Promise<T[]>
  /** Runs several statements separated by `;`, with no parameters (migrations). */
  exec(script: string): Promise<void>
}

export interface Db extends Queryable {
  /** `postgres` for a real server, `embedded` for PGlite. */
  readonly kind: 'postgres' | 'embedded'
  /** Runs fn in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>
  /** Resolves when the database answers a trivial query; throws otherwise. */
  ping(): Promise<void>
  close(): Promise<void>
}

/** Postgres error code for a unique-constraint violation. */
export const UNIQUE_VIOLATION = '23505'

/** The SQLSTATE of a database error, from either adapter. */
export function sqlState(error: unknown): string | undefined {
  if (typeof error === 'object' && error !== null && 'code' in error) {
    const code = (error as { code: unknown }).code
    return typeof code === 'string' ? code : undefined
  }
  return undefined
}
