// Statement deadlines in the database server's clock (storage/statement-deadline.ts):
// the clock reading (offset, uncertainty, margin, refreshes, distrust) with a
// scripted server clock; and, on real Postgres through a TCP fault proxy that
// holds a statement the way a frozen server does, that a statement asking for
// its deadline stores nothing once its caller was refused - where the same
// statement without one is stored behind the refusal.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Db } from '../../src/storage/db.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import {
  createDatabaseClock,
  STATEMENT_DEADLINE,
  withDeadlineParameter,
} from '../../src/storage/statement-deadline.ts'
import { TEST_DATABASE_URL, uniqueName } from '../support/backends.ts'
import { type FaultProxy, startFaultProxy, targetOf, throughProxy } from '../support/fault-proxy.ts'

/** A server clock `offsetMs` ahead of ours, read in `roundTripMs`, on a clock the test moves. */
function scriptedServer(offsetMs: number, roundTripMs: number) {
  const clock = { now: 1_000_000, offsetMs, roundTripMs, reads: 0 }
  const readServerMs = async () => {
    clock.reads++
    // The server reads its clock halfway through the round trip.
    clock.now += clock.roundTripMs / 2
    const serverMs = clock.now + clock.offsetMs
    clock.now += clock.roundTripMs / 2
    return serverMs
  }
  return { clock, readServerMs, now: () => clock.now }
}

describe('the database clock', () => {
  test('a deadline moves by the offset, less half the round trip and the margin', async () => {
    const server = scriptedServer(5_000, 40)
    const clock = createDatabaseClock({ ...server, marginMs: 100 })
    expect(await clock.serverDeadline(2_000_000)).toBe(2_000_000 + 5_000 - 20 - 100)
    expect(server.clock.reads).toBe(1)
  })

  test('the clock is read once, then again in the background once the reading is old', async () => {
    const server = scriptedServer(-300, 10)
    const clock = createDatabaseClock({ ...server, marginMs: 0, refreshMs: 1_000 })
    await clock.serverDeadline(0)
    await clock.serverDeadline(0)
    expect(server.clock.reads).toBe(1)
    server.clock.now += 1_001
    server.clock.offsetMs = -200
    // The old reading answers this caller; the new one the next.
    expect(await clock.serverDeadline(0)).toBe(-300 - 5)
    expect(server.clock.reads).toBe(2)
    expect(await clock.serverDeadline(0)).toBe(-200 - 5)
  })

  test('a rougher reading does not replace a tighter recent one', async () => {
    const server = scriptedServer(1_000, 10)
    const clock = createDatabaseClock({ ...server, marginMs: 0, refreshMs: 1 })
    await clock.serverDeadline(0)
    server.clock.roundTripMs = 400
    server.clock.now += 2
    await clock.serverDeadline(0) // starts a refresh with a slow round trip
    await clock.serverDeadline(0)
    expect(server.clock.reads).toBeGreaterThanOrEqual(2)
    expect(await clock.serverDeadline(0)).toBe(1_000 - 5)
  })

  test('a distrusted reading is replaced before the next deadline, however rough the new one', async () => {
    const server = scriptedServer(1_000, 10)
    const clock = createDatabaseClock({ ...server, marginMs: 0 })
    expect(await clock.serverDeadline(0)).toBe(995)
    // The server's clock was stepped forward: it now refuses what we think is in time.
    server.clock.offsetMs = 61_000
    server.clock.roundTripMs = 100
    clock.distrust()
    expect(await clock.serverDeadline(0)).toBe(61_000 - 50)
    expect(server.clock.reads).toBe(2)
  })

  test('a reading that is not a number fails the caller, and the next caller reads again', async () => {
    let reads = 0
    const clock = createDatabaseClock({
      readServerMs: async () => (++reads === 1 ? Number.NaN : 10_000),
      marginMs: 0,
      now: () => 10_000,
    })
    await expect(clock.serverDeadline(0)).rejects.toThrow('clock read as NaN')
    expect(await clock.serverDeadline(0)).toBe(0)
    expect(reads).toBe(2)
  })

  test('only STATEMENT_DEADLINE is replaced among the parameters', () => {
    expect(withDeadlineParameter(['a', STATEMENT_DEADLINE, 3, null], 42)).toEqual([
      'a',
      42,
      3,
      null,
    ])
  })
})

const TIMEOUT_MS = 400

if (TEST_DATABASE_URL) {
  const databaseUrl = TEST_DATABASE_URL
  describe('a statement held as by a frozen Postgres', () => {
    const schema = uniqueName('deadline')
    let admin: Db
    let proxy: FaultProxy
    let db: Db

    beforeAll(async () => {
      admin = createPostgresDb(databaseUrl, { max: 1 })
      await admin.exec(`CREATE SCHEMA ${schema}`)
      const direct = createPostgresDb(databaseUrl, { schema, max: 1 })
      await migrate(direct)
      await direct.close()
      proxy = await startFaultProxy(targetOf(databaseUrl))
      // One connection: a statement sent after the held one runs after it.
      db = createPostgresDb(throughProxy(databaseUrl, proxy), {
        schema,
        max: 1,
        timeoutMs: TIMEOUT_MS,
      })
    })
    afterAll(async () => {
      proxy.pass()
      await db.close()
      await proxy.close()
      await admin.exec(`DROP SCHEMA ${schema} CASCADE`)
      await admin.close()
    })

    const storedUser = async (id: string) =>
      (await admin.query(`SELECT id FROM ${schema}.users WHERE id = $1`, [id])).length

    /**
     * Sends `text` with the user id as $1 and STATEMENT_DEADLINE as $2, holds
     * it on its way until the caller was refused, lets it through, and waits
     * until the server has run it (a statement after it on the same
     * connection answered). The statement runs once in time first: prepared
     * then, it goes out whole in one chunk (a first one waits for its
     * description, and the server's statement_timeout would count the hold).
     */
    async function refusedWhileHeld(text: string, id: string): Promise<unknown> {
      const inTime = uniqueName('user')
      await db.query(text, [inTime, STATEMENT_DEADLINE])
      expect(await storedUser(inTime)).toBe(1)
      const held = proxy.holdRequest((chunk) => chunk.includes(id))
      const outcome = db.query(text, [id, STATEMENT_DEADLINE]).then(
        () => 'stored in time',
        (error: unknown) => error,
      )
      await held
      const refusal = await outcome
      proxy.pass()
      expect(await db.query<{ n: number }>('SELECT 1 AS n')).toEqual([{ n: 1 }])
      return refusal
    }

    // The same parameters either way; without the check, $2 is there but unused.
    const held = [
      {
        name: 'a statement asking for its deadline stores nothing once its caller was refused',
        text: 'INSERT INTO users (id) SELECT $1 WHERE conduit_before($2)',
        stored: 0,
      },
      {
        name: 'without its deadline the same statement is stored behind the refusal',
        text: 'INSERT INTO users (id) SELECT $1 WHERE $2::float8 IS NOT NULL',
        stored: 1,
      },
    ]
    for (const { name, text, stored } of held)
      test(name, async () => {
        const id = uniqueName('user')
        const refusal = await refusedWhileHeld(text, id)
        expect(refusal).toBeInstanceOf(Error)
        expect(await storedUser(id)).toBe(stored)
      }, 15_000)

    test('in time, it is stored', async () => {
      const id = uniqueName('user')
      await db.query('INSERT INTO users (id) SELECT $1 WHERE conduit_before($2)', [
        id,
        STATEMENT_DEADLINE,
      ])
      expect(await storedUser(id)).toBe(1)
    })
  })
}
