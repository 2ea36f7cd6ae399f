// The Db port: parameterized SQL ($1, $2, …) and transactions. Adapters run the
// same SQL text: postgres.ts (postgres.js) and pglite.ts (embedded PGlite).

import { StoreOverloadedError } from './store-failure.ts'

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

/**
 * Waits for statements sent together on one transaction (each sent before the
 * next, so they ran in that order in one round trip) and fails with the first
 * failure by position, not by time: after an error Postgres refuses the rest
 * of the transaction, and those refusals can settle before the error's own
 * handling (e.g. a unique violation turned into a conflict) has run. Falsy
 * entries stand for statements a caller did not need to send.
 */
export async function allInOrder(
  statements: readonly (Promise<unknown> | false | undefined)[],
): Promise<void> {
  const settled = await Promise.allSettled(statements)
  for (const result of settled) if (result.status === 'rejected') throw result.reason
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

/** A connect or statement took longer than the adapter's deadline. */
export class DatabaseTimeoutError extends Error {
  readonly code = 'QUERY_TIMEOUT'
  constructor(timeoutMs: number) {
    super(`the database did not answer within ${timeoutMs} ms`)
    this.name = 'DatabaseTimeoutError'
  }
}

/** Driver and socket codes meaning the database cannot be reached right now. */
const UNREACHABLE = new Set([
  'QUERY_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
])

/** SQLSTATE of a statement cancelled by a cancel request or a statement timeout. */
const QUERY_CANCELED = '57014'

/**
 * Whether an error says the database is down or unreachable (unavailable), rather
 * than that a statement failed: socket errors, postgres.js connection codes,
 * SQLSTATE class 08 (connection exception), 57P (shutting down), 53300 (too
 * many connections), 57014 (statement cancelled: a statement timeout, or the
 * cancel request of another statement's deadline, which names the server
 * process and may land on the statement that runs after it).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  // A pool too busy to take the statement in time: not answered now, as for the callers here.
  if (error instanceof StoreOverloadedError) return error.store === 'database'
  const code = sqlState(error)
  if (code === undefined) return false
  return (
    UNREACHABLE.has(code) ||
    code.startsWith('08') ||
    code.startsWith('57P') ||
    code === '53300' ||
    code === QUERY_CANCELED
  )
}
