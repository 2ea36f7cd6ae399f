// Db adapter for a real Postgres server, through postgres.js. It fails fast:
// connecting, each statement (including the wait for a pooled connection) and
// each step of a transaction get `timeoutMs`, after which the caller gets a
// DatabaseTimeoutError (unavailable, see isDatabaseUnavailable) instead of hanging
// on a server that is stopped, frozen or unreachable. A statement is never
// cancelled by a cancel request once it was handed to a connection: such a
// request names the server process, not the statement, so when it arrives late
// (a frozen server answers its queue at SIGCONT) it hits whatever that
// connection runs then - another request's BEGIN or statement - and can leave
// a pooled connection inside an aborted transaction that swallows the writes
// of later requests. Postgres enforces the deadline itself instead: every
// session runs with `statement_timeout` = the deadline, so a merely slow
// statement ends on the server, and only a statement still waiting for a
// pooled connection is withdrawn (which sends nothing). While the
// server is down, the statement timing out is often the one a new connection
// was opened for: postgres.js 3.4.9 then never gave that connection to the
// pool, so once `max` statements had timed out that way in an outage the
// pool never served again. patches/postgres@3.4.9.patch (bun patchedDependencies) hands
// such a connection to the pool once it opens. When a session ends (a server
// stopping, a terminated backend), the same patch leaves nothing of it to the
// next session of that connection: 3.4.9 failed the first statement of the
// reconnected session with the ended one's error (a 503 after a
// restart), and when the session ended while postgres.js set it up (its
// array-type query, the first on every connection) it also rejected a
// promise nobody handled, which ended the process. A connection that failed
// connects again after a short pause (reconnectPause), not postgres.js's
// growing one, so a pool serves again within a deadline once the server is
// back.
import postgres from 'postgres'
import { DatabaseTimeoutError, type Db, type Queryable, type Row, sqlState } from './db.ts'
import {
  asksForDeadline,
  createDatabaseClock,
  type DatabaseClock,
  epochNow,
  STARTED_LATE,
  withDeadlineParameter,
} from './statement-deadline.ts'
import {
  createStoreFailurePolicy,
  type StoreFailurePolicy,
  StoreOverloadedError,
} from './store-failure.ts'

export interface PostgresOptions {
  /** Pool size. */
  max?: number
  /** Schema to work in (tests use a fresh one per run); `public` stays visible after it. */
  schema?: string
  /** Longest a connect or a statement may take (default 2 s). */
  timeoutMs?: number
  /**
   * What a missed deadline says about the database: the service's one rule
   * (store-failure.ts), shared with the cache and the state so it measures
   * the same event-loop lag; a policy of this pool's own when absent.
   */
  failures?: StoreFailurePolicy
}

type Sql = postgres.Sql | postgres.TransactionSql

/** Postgres ended the statement at statement_timeout (57014 is also a cancel request's code). */
const isStatementTimeout = (error: unknown) =>
  error instanceof postgres.PostgresError &&
  error.code === '57014' &&
  error.message.includes('statement timeout')

/** A postgres.js query: `state` is set once a connection took it (postgres.js's own field). */
type PendingQuery = PromiseLike<unknown> & { cancel(): unknown; state?: unknown }

/**
 * Runs a postgres.js query with a deadline; on timeout onTimeout is told and a
 * query still waiting for a pooled connection leaves the queue. One a
 * connection took is left to the server's statement_timeout (see the header).
 * So is one of a transaction, taken or not: postgres.js cancels a waiting
 * query from the pool's queue only, so one waiting in a transaction's own
 * queue would stay there, never settled - the transaction never ended, and
 * its connection was left inside it ("idle in transaction (aborted)").
 */
function withDeadline<T>(
  query: PendingQuery,
  timeoutMs: number,
  pool: PoolHealth,
  inTransaction?: { onTimeout: (error: Error) => void },
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const since = performance.now()
    const timer = setTimeout(() => {
      const error = pool.verdict(new DatabaseTimeoutError(timeoutMs), since, !query.state)
      if (inTransaction) {
        reject(error)
        inTransaction.onTimeout(error)
        return
      }
      if (!query.state) Promise.resolve(query.cancel()).catch(() => {})
      reject(error)
    }, timeoutMs)
    query.then(
      (rows) => {
        clearTimeout(timer)
        pool.answered()
        resolve(rows as unknown as T)
      },
      (error: unknown) => {
        clearTimeout(timer)
        // The server ended it at the same deadline: the caller sees one error for both.
        reject(isStatementTimeout(error) ? new DatabaseTimeoutError(timeoutMs) : error)
      },
    )
  })
}

/**
 * What a statement that passed its deadline says (CONTRACT §19, "overload is
 * not an outage"): the store-failure rule decides - nothing, when this
 * process's event loop ran late for much of the window, or when the database
 * answered another statement since this one began (it is up, only slow, or
 * every pooled connection was busy): a StoreOverloadedError, a 503
 * `overloaded`; otherwise the server did not answer: a DatabaseTimeoutError,
 * an outage. Every answer is told to the policy as that evidence.
 */
interface PoolHealth {
  answered(): void
  verdict(timeout: DatabaseTimeoutError, since: number, waitedForConnection: boolean): Error
}

function poolHealth(failures: StoreFailurePolicy): PoolHealth {
  return {
    answered: () => failures.answered('database'),
    verdict(timeout, since, waitedForConnection) {
      const evidence = failures.judgeMissedDeadline(since, 'database')
      if (evidence === 'outage') return timeout
      if (evidence === 'lagging') return new StoreOverloadedError('database', timeout)
      return new StoreOverloadedError(
        'database',
        timeout,
        waitedForConnection
          ? 'every pooled database connection was busy past the deadline'
          : 'the database answered other statements but not this one in time',
      )
    },
  }
}

function queryable(
  sql: Sql,
  timeoutMs: number,
  pool: PoolHealth,
  clock: DatabaseClock,
  inTransaction?: { onTimeout: (error: Error) => void },
): Queryable {
  const run = <T>(text: string, params: readonly unknown[]) =>
    // postgres.js types parameters loosely; values are still sent separately from the text.
    // Prepared (named, once per connection): unsafe() defaults to parsing and
    // planning each statement anew, a third of Postgres's CPU on a turn.
    withDeadline<T[]>(
      sql.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: true }),
      timeoutMs,
      pool,
      inTransaction,
    )
  /** A statement given its deadline in the server's clock (statement-deadline.ts). */
  async function inTime<T>(text: string, params: readonly unknown[]): Promise<T[]> {
    const serverDeadline = await clock.serverDeadline(epochNow() + timeoutMs)
    try {
      return await run<T>(text, withDeadlineParameter(params, serverDeadline))
    } catch (error) {
      if (sqlState(error) !== STARTED_LATE) throw error
      // Refused as late while its caller still waited: the server's clock is not where it was read.
      clock.distrust()
      throw new StoreOverloadedError(
        'database',
        error,
        'the database started a statement after its deadline',
      )
    }
  }
  return {
    query<T extends Row = Row>(text: string, params: readonly unknown[] = []) {
      return asksForDeadline(params) ? inTime<T>(text, params) : run<T>(text, params)
    },
    // Scripts (migrations) may legitimately run long: no deadline, on the
    // server either, for this transaction only.
    async exec(script: string) {
      if (!inTransaction) throw new Error('postgres: exec runs inside a transaction')
      await sql.unsafe('SET LOCAL statement_timeout = 0')
      await sql.unsafe(script)
    },
  }
}

/** The server ends a session idle inside a transaction this long (ours last milliseconds). */
export const IDLE_IN_TRANSACTION_TIMEOUT_MS = 30_000

/**
 * How long a connection that failed waits before connecting again, in
 * seconds (postgres.js's `backoff`, given the pool's failed connects since
 * one last opened): 50 ms, doubling, at most a quarter of a statement's
 * deadline. postgres.js's own pause grows to 10-20 s within a few seconds of
 * refused connects, so after a restart the statements given to those
 * connections passed their deadlines long after the server answered again:
 * sends refused with 503 while Postgres was up. A connect is only tried for a
 * statement waiting for it, so a short pause makes no storm; and a statement
 * made while the server is down is refused within that pause rather than
 * waiting out its deadline.
 */
const reconnectPause = (timeoutMs: number) => (failedConnects: number) =>
  Math.min(50 * 2 ** failedConnects, timeoutMs / 4) / 1000

/** Connections of the pool unless told otherwise. */
export const POSTGRES_POOL_SIZE = 10
/**
 * Runs fn in a transaction whose every step has a deadline: getting a
 * connection and BEGIN, each statement, COMMIT. When one passes, the caller
 * is answered at once, without waiting for a ROLLBACK the server may never
 * answer; fn is not started at all once the caller was answered.
 *
 * A statement of a transaction that passes its deadline is not cancelled: fn
 * fails at once, and postgres.js sends ROLLBACK after the statements already
 * sent. A cancel request names the server process, not the statement, so it
 * may land on a later statement of the same connection - the ROLLBACK itself -
 * which left the connection back in the pool inside an open transaction,
 * holding its locks: under load (deadlines passing while waiting for a busy
 * event loop, not a dead server) that stalled every turn queued behind them.
 */
function timedTransaction<T>(
  sql: postgres.Sql,
  timeoutMs: number,
  pool: PoolHealth,
  clock: DatabaseClock,
  fn: (tx: Queryable) => Promise<T>,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let answered = false
    let timer: ReturnType<typeof setTimeout> | undefined
    const fail = (error: unknown) => {
      clearTimeout(timer)
      if (answered) return
      answered = true
      // A statement the server ended at the deadline fails the transaction as the timer would.
      reject(isStatementTimeout(error) ? new DatabaseTimeoutError(timeoutMs) : error)
    }
    let begun = false
    const deadline = () => {
      clearTimeout(timer)
      const since = performance.now()
      timer = setTimeout(
        () => fail(pool.verdict(new DatabaseTimeoutError(timeoutMs), since, !begun)),
        timeoutMs,
      )
    }
    deadline()
    sql
      .begin(async (tx) => {
        clearTimeout(timer)
        begun = true
        pool.answered()
        if (answered) throw new DatabaseTimeoutError(timeoutMs)
        const result = await fn(queryable(tx, timeoutMs, pool, clock, { onTimeout: fail }))
        // The caller was told it failed: it must not commit behind their back.
        if (answered) throw new DatabaseTimeoutError(timeoutMs)
        deadline()
        return result
      })
      .then((result) => {
        clearTimeout(timer)
        if (answered) return
        answered = true
        resolve(result as T)
      }, fail)
  })
}

/**
 * Kept off a statement's deadline in the server's clock (statement-deadline.ts),
 * at most a quarter of the deadline: the time its answer has to come back.
 */
const STATEMENT_DEADLINE_MARGIN_MS = 250

/** Connects to `url`; the pool opens connections lazily. */
export function createPostgresDb(url: string, options: PostgresOptions = {}): Db {
  const timeoutMs = options.timeoutMs ?? 2_000
  const sql = postgres(url, {
    max: options.max ?? POSTGRES_POOL_SIZE,
    onnotice: () => {},
    // Seconds, until the server is ready for queries (TCP connect and startup).
    connect_timeout: timeoutMs / 1000,
    backoff: reconnectPause(timeoutMs),
    connection: {
      ...(options.schema ? { search_path: `${options.schema},public` } : {}),
      // A backstop: a transaction left open by a client bug releases its locks.
      idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_TIMEOUT_MS,
      // The server ends a statement past the deadline itself (see the header).
      statement_timeout: timeoutMs,
    },
  })
  const pool = poolHealth(options.failures ?? createStoreFailurePolicy())
  const clock = createDatabaseClock({
    readServerMs: async () => {
      const [row] = await withDeadline<{ ms: number }[]>(
        sql`SELECT extract(epoch FROM clock_timestamp())::float8 * 1000 AS ms`,
        timeoutMs,
        pool,
      )
      return Number(row?.ms)
    },
    marginMs: Math.min(STATEMENT_DEADLINE_MARGIN_MS, timeoutMs / 4),
  })
  const base = queryable(sql, timeoutMs, pool, clock)
  return {
    kind: 'postgres',
    query: base.query,
    // Scripts (migrations, VACUUM) may legitimately run long: no deadline, on
    // the server either, for this script only (RESET restores the session's).
    async exec(script) {
      const reserved = await sql.reserve()
      try {
        await reserved.unsafe('SET statement_timeout = 0')
        await reserved.unsafe(script)
      } finally {
        await reserved.unsafe('RESET statement_timeout').catch(() => {})
        reserved.release()
      }
    },
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      timedTransaction(sql, timeoutMs, pool, clock, fn),
    async ping() {
      await withDeadline(sql`select 1`, timeoutMs, pool)
    },
    async close() {
      await sql.end({ timeout: 5 })
    },
  }
}
