// The Postgres adapter's pool across a real server that stops, restarts or
// ends a session (CONTRACT §19), on a private Postgres (support/private-
// postgres.ts): once the server answers again, so does the pool.
// - A session that ends while a statement runs (57P01 from a stopping server
//   or pg_terminate_backend) fails that statement as unavailable, and only
//   that one: the first statement of the connection's next session runs
//   (postgres.js 3.4.9 failed it with the ended session's error).
// - A session that ends while postgres.js sets its connection up (its
//   array-type query, held here by a TCP proxy as by a server still working
//   on it) leaves no unhandled rejection, which would end a server process
//   (bun test fails the test in which one occurs, or the run, between tests);
//   the statement the connection was opened for was never sent, so it runs
//   on the next session, or fails as unavailable when there is none.
// - After an outage long enough for many refused connects, statements made
//   right after the restart are answered within their deadline, not left
//   behind postgres.js's reconnect pause that grows to 10-20 s.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, test } from 'bun:test'
import { type Db, isDatabaseUnavailable } from '../../src/storage/db.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { type FaultProxy, startFaultProxy, throughProxy } from '../support/fault-proxy.ts'
import {
  type PrivatePostgres,
  privatePostgresMissing,
  startPrivatePostgres,
} from '../support/private-postgres.ts'

if (privatePostgresMissing)
  console.log(`postgres-restart.test.ts skipped: ${privatePostgresMissing}`)

/** The database the pools under test use, so the admin's own sessions are told apart. */
const DATABASE = 'restarted'
const TIMEOUT_MS = 1_000
/** postgres.js's array-type query: the first statement of every new connection. */
const isArrayTypeQuery = (chunk: Buffer) => chunk.includes('typarray')

/** The sessions of a pool (by its application_name), as pg_stat_activity shows them. */
const sessionsOf = async (pg: PrivatePostgres, pool: string) =>
  (await pg.activity(DATABASE)).filter((backend) => backend.application_name === pool)

/** The pid of the pool's session running a statement, once it runs (only pg_stat_activity tells). */
async function activeBackend(pg: PrivatePostgres, pool: string): Promise<number> {
  for (;;) {
    const active = (await sessionsOf(pg, pool)).find((backend) => backend.state === 'active')
    if (active) return active.pid
    await Bun.sleep(20)
  }
}

/** The statement's rows, or the error it failed with. */
const attempt = (db: Db, text: string) =>
  db.query(text).then(
    (rows) => rows,
    (error: unknown) => error,
  )

describe.skipIf(privatePostgresMissing !== undefined)(
  'a Postgres pool across a server restart',
  () => {
    let pg: PrivatePostgres
    let proxy: FaultProxy
    let db: Db
    /** The application_name of the test's pool: its sessions, not an earlier test's still ending. */
    let pool = ''
    let pools = 0

    beforeAll(async () => {
      pg = await startPrivatePostgres()
      await pg.admin.unsafe(`CREATE DATABASE ${DATABASE}`)
      proxy = await startFaultProxy({ host: '127.0.0.1', port: pg.port })
    }, 60_000)
    afterAll(async () => {
      await proxy?.close()
      await pg?.close()
    }, 30_000)

    beforeEach(() => {
      pool = `pool-${++pools}`
      db = createPostgresDb(throughProxy(`${pg.url(DATABASE)}?application_name=${pool}`, proxy), {
        max: 1,
        timeoutMs: TIMEOUT_MS,
      })
    })
    afterEach(async () => {
      proxy.pass()
      await db.close()
    })

    test('the server stops while a connection is set up: the statement fails as unavailable, nothing is left unhandled, and after the restart statements answer', async () => {
      const held = proxy.holdRequest(isArrayTypeQuery)
      const first = attempt(db, 'SELECT 1 AS n')
      await held
      // The session ends (57P01 admin_shutdown) and the reconnect is refused.
      await pg.stop('fast')
      const refused = await first
      expect({ refused, unavailable: isDatabaseUnavailable(refused) }).toMatchObject({
        unavailable: true,
      })
      await pg.start()
      expect(await attempt(db, 'SELECT 2 AS n')).toEqual([{ n: 2 }])
    }, 30_000)

    test('a session ended while its connection is set up (the server stays up): the statement runs on the new session', async () => {
      const held = proxy.holdRequest(isArrayTypeQuery)
      const first = attempt(db, 'SELECT 3 AS n')
      await held
      const sessions = await sessionsOf(pg, pool)
      expect(sessions).toHaveLength(1)
      await pg.admin`SELECT pg_terminate_backend(${sessions[0]?.pid ?? 0})`
      // Not sent before, so not run twice: it runs once, on the connection opened again.
      expect(await first).toEqual([{ n: 3 }])
      expect(await attempt(db, 'SELECT 4 AS n')).toEqual([{ n: 4 }])
    }, 30_000)

    test('a statement running when the server stops: it fails as unavailable, and after the restart the next statement answers', async () => {
      const running = attempt(db, 'SELECT pg_sleep(5)')
      await activeBackend(pg, pool)
      // The session answers 57P01 admin_shutdown and closes.
      await pg.stop('fast')
      const failed = await running
      expect({ failed, unavailable: isDatabaseUnavailable(failed) }).toMatchObject({
        unavailable: true,
      })
      await pg.start()
      // On a new session, not failed with the old one's error.
      expect(await attempt(db, 'SELECT 5 AS n')).toEqual([{ n: 5 }])
    }, 30_000)

    test('a running statement whose session is ended (the server stays up): the next statement answers', async () => {
      const running = attempt(db, 'SELECT pg_sleep(5)')
      const backend = await activeBackend(pg, pool)
      await pg.admin`SELECT pg_terminate_backend(${backend})`
      const failed = await running
      expect({ failed, unavailable: isDatabaseUnavailable(failed) }).toMatchObject({
        unavailable: true,
      })
      expect(await attempt(db, 'SELECT 6 AS n')).toEqual([{ n: 6 }])
    }, 30_000)

    for (const mode of ['fast', 'immediate'] as const)
      test(`after an outage (stop -m ${mode}) with many refused connects, statements made right after the restart are answered`, async () => {
        const wide = createPostgresDb(pg.url(DATABASE), { max: 4, timeoutMs: TIMEOUT_MS })
        try {
          // Every connection open, as in a service that was busy when the server stopped.
          await Promise.all(Array.from({ length: 4 }, () => wide.query('SELECT pg_sleep(0.05)')))
          await pg.stop(mode)
          // Statements while it is down, each refused: every connection's connects fail, again and again.
          for (let round = 0; round < 4; round++) {
            const outcomes = await Promise.all(
              Array.from({ length: 4 }, () => attempt(wide, 'SELECT 1')),
            )
            for (const outcome of outcomes) expect(isDatabaseUnavailable(outcome)).toBe(true)
          }
          await pg.start()
          // More than the pool holds, statements and transactions: all answered, none past its deadline.
          const answers = await Promise.all(
            Array.from({ length: 8 }, (_, index) =>
              index % 2 === 0
                ? attempt(wide, `SELECT ${index} AS n`)
                : wide
                    .transaction((tx) => tx.query(`SELECT ${index} AS n`))
                    .then(
                      (rows) => rows,
                      (error: unknown) => error,
                    ),
            ),
          )
          expect(answers).toEqual(Array.from({ length: 8 }, (_, index) => [{ n: index }]))
        } finally {
          await wide.close()
        }
      }, 60_000)
  },
)
