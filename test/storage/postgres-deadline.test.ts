// The Postgres adapter's deadlines and its connection pool, through a TCP
// fault proxy: a statement whose deadline passes while the connection it
// waits for is still being opened (the server is down) is cancelled, and the
// connection it would have run on still serves the statements after it once
// the server is back. A pool of one makes a lost connection a dead pool.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { DatabaseTimeoutError, type Db } from '../../src/storage/db.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { TEST_DATABASE_URL } from '../support/backends.ts'
import { type FaultProxy, startFaultProxy, targetOf, throughProxy } from '../support/fault-proxy.ts'

const TIMEOUT_MS = 300

if (TEST_DATABASE_URL) {
  const databaseUrl = TEST_DATABASE_URL
  describe('Postgres deadlines and the pool', () => {
    let proxy: FaultProxy
    let db: Db

    beforeAll(async () => {
      proxy = await startFaultProxy(targetOf(databaseUrl))
      db = createPostgresDb(throughProxy(databaseUrl, proxy), { max: 1, timeoutMs: TIMEOUT_MS })
    })
    afterAll(async () => {
      proxy.pass()
      await db.close()
      await proxy.close()
    })

    /** The statement's rows, or the error it failed with. */
    const attempt = (text: string) =>
      db.query<{ n: number }>(text).then(
        (rows) => rows,
        (error: unknown) => error,
      )

    test('a statement cancelled while its connection opens does not take that connection from the pool', async () => {
      proxy.drop()
      const failed = await attempt('SELECT 1 AS n')
      expect(failed).toBeInstanceOf(DatabaseTimeoutError)

      proxy.pass()
      // The connection opens again by itself (with the driver's backoff); each
      // attempt waits at most one deadline. Without the connection back in the
      // pool every attempt times out.
      const outcomes: unknown[] = []
      for (let tries = 0; tries < 15; tries++) {
        const outcome = await attempt('SELECT 2 AS n')
        outcomes.push(outcome)
        if (Array.isArray(outcome)) break
      }
      expect(outcomes.at(-1)).toEqual([{ n: 2 }])
      // And it stays usable: the next statements run at once.
      expect(await attempt('SELECT 3 AS n')).toEqual([{ n: 3 }])
    }, 15_000)
  })
}
