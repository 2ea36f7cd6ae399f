// Transactions whose statements pass their deadline, on real Postgres: the
// caller gets a DatabaseTimeoutError, and every connection goes back to the
// pool outside any transaction - none is left "idle in transaction" holding
// its locks - whether the statements were sent one by one or together. (A
// cancel request sent for such a statement could land on the ROLLBACK after
// it and leave the connection inside the aborted transaction.) And the
// server's idle-in-transaction timeout is set on every connection.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { allInOrder, DatabaseTimeoutError, type Db, type Queryable } from '../../src/storage/db.ts'
import { createPostgresDb, IDLE_IN_TRANSACTION_TIMEOUT_MS } from '../../src/storage/postgres.ts'
import { StoreOverloadedError } from '../../src/storage/store-failure.ts'
import { TEST_DATABASE_URL } from '../support/backends.ts'

const TIMEOUT_MS = 30
const TRANSACTIONS = 400

/**
 * The pool serves again once the statements already sent have finished: the
 * server ends each at the deadline (statement_timeout), none is cancelled by a
 * cancel request, so a backlog takes a moment. Each try waits one deadline.
 */
async function servedAgain(db: Db): Promise<unknown> {
  const until = Date.now() + 20_000
  let served: unknown
  while (!Array.isArray(served) && Date.now() < until)
    served = await db.query<{ n: number }>('SELECT 1 AS n').catch((error: unknown) => error)
  return served
}

if (TEST_DATABASE_URL) {
  const databaseUrl = TEST_DATABASE_URL
  describe('Postgres transactions past their deadline', () => {
    const appName = `conduit-tx-deadline-${process.pid}`
    const table = `tx_deadline_${process.pid}`
    let admin: postgres.Sql
    let db: Db

    beforeAll(async () => {
      admin = postgres(databaseUrl, { max: 1, onnotice: () => {} })
      await admin.unsafe(`CREATE TABLE ${table} (id text PRIMARY KEY, v int)`)
      const url = new URL(databaseUrl)
      url.searchParams.set('application_name', appName)
      db = createPostgresDb(url.toString(), { max: 10, timeoutMs: TIMEOUT_MS })
    })
    // The backlog of statements past their deadline drains first: on a busy machine that takes a while.
    afterAll(async () => {
      await db.close()
      await admin.unsafe(`DROP TABLE IF EXISTS ${table}`)
      await admin.end()
    }, 30_000)

    const slowWrites = {
      oneByOne: async (tx: Queryable, id: string) => {
        await tx.query(`INSERT INTO ${table} VALUES ($1, 1)`, [id])
        await tx.query('SELECT pg_sleep($1)', [0.05])
        await tx.query(`UPDATE ${table} SET v = 2 WHERE id = $1`, [id])
      },
      together: (tx: Queryable, id: string) =>
        allInOrder([
          tx.query(`INSERT INTO ${table} VALUES ($1, 1)`, [id]),
          tx.query('SELECT pg_sleep($1)', [0.05]),
          tx.query(`UPDATE ${table} SET v = 2 WHERE id = $1`, [id]),
        ]),
    }

    for (const [how, writes] of Object.entries(slowWrites))
      test(`statements sent ${how === 'oneByOne' ? 'one by one' : 'together'}: every connection comes back outside a transaction`, async () => {
        const outcomes = await Promise.all(
          Array.from({ length: TRANSACTIONS }, (_, index) =>
            db
              .transaction((tx) => writes(tx, `${how}-${index}`))
              .then(
                () => 'committed',
                (error: unknown) => error,
              ),
          ),
        )
        // Each caller is told of the deadline, whether the client's timer or the server's
        // statement_timeout ended it first - as a busy pool's when it waited for a connection.
        expect(
          outcomes
            .filter(
              (outcome) =>
                !(outcome instanceof DatabaseTimeoutError) &&
                !(outcome instanceof StoreOverloadedError && outcome.store === 'database'),
            )
            .map(String),
        ).toEqual([])
        expect(await servedAgain(db)).toEqual([{ n: 1 }])
        for (let tries = 0; tries < 50; tries++) {
          const open = await admin`
            SELECT count(*)::int AS n FROM pg_stat_activity
             WHERE application_name = ${appName} AND state LIKE 'idle in transaction%'`
          if (open[0]?.n === 0) break
          await Bun.sleep(20)
        }
        const open = await admin`
          SELECT state, query FROM pg_stat_activity
           WHERE application_name = ${appName} AND state LIKE 'idle in transaction%'`
        expect([...open]).toEqual([])
        // Nothing was committed: each transaction rolled back.
        const [rows] = await admin.unsafe<{ n: number }[]>(
          `SELECT count(*)::int AS n FROM ${table}`,
        )
        expect(rows?.n).toBe(0)
      }, 30_000)

    test('connections carry the idle-in-transaction timeout, and the deadline as statement_timeout', async () => {
      await servedAgain(db)
      const [row] = await db.query<{ idle: string; statement: string }>(
        `SELECT current_setting('idle_in_transaction_session_timeout') AS idle,
                current_setting('statement_timeout') AS statement`,
      )
      expect(row?.idle).toBe(`${IDLE_IN_TRANSACTION_TIMEOUT_MS / 1000}s`)
      expect(row?.statement).toBe(`${TIMEOUT_MS}ms`)
    })
  })
}
