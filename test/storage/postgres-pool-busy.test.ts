import { afterAll, describe, expect, test } from 'bun:test'
import { DatabaseTimeoutError, isDatabaseUnavailable } from '../../src/storage/db.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { createStoreFailurePolicy, StoreOverloadedError } from '../../src/storage/store-failure.ts'
import { TEST_DATABASE_URL } from '../support/backends.ts'

// A statement that finds no free pooled connection within its deadline, on
// real Postgres (CONTRACT §19, "overload is not an outage"): while the
// database answers the pool's other statements, that is a busy pool - a
// StoreOverloadedError (503 `overloaded`), still "not answered now" for the
// turn engine - and never a database outage; so is any deadline passed
// while this process's own event loop ran late (the lag rule of
// store-failure.ts); when nothing was answered within the deadline and the
// process kept time (a server that does not answer), it is an outage.

const TIMEOUT_MS = 200

describe.skipIf(!TEST_DATABASE_URL)('a Postgres pool with no connection free', () => {
  const db = createPostgresDb(TEST_DATABASE_URL as string, { max: 1, timeoutMs: TIMEOUT_MS })
  afterAll(() => db.close())

  test('while the database answers: overloaded; once its connection is free again: served', async () => {
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let inside: () => void = () => {}
    const entered = new Promise<void>((resolve) => {
      inside = resolve
    })
    // The one connection is taken by a transaction whose statements keep being answered.
    let holdingOn = true
    void held.then(() => {
      holdingOn = false
    })
    const holding = db.transaction(async (tx) => {
      await tx.query('SELECT 1')
      inside()
      while (holdingOn) await tx.query('SELECT pg_sleep(0.02)')
    })
    await entered
    const refused = await db.query('SELECT 1').catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(StoreOverloadedError)
    expect((refused as StoreOverloadedError).store).toBe('database')
    expect((refused as Error).cause).toBeInstanceOf(DatabaseTimeoutError)
    expect(isDatabaseUnavailable(refused)).toBe(true)
    release()
    await holding
    expect(await db.query<{ n: number }>('SELECT 1 AS n')).toEqual([{ n: 1 }])
  })

  test('with nothing answered within the deadline: a database timeout, an outage', async () => {
    // A pool whose first statement waits for a connection the other one holds from the start.
    const quiet = createPostgresDb(TEST_DATABASE_URL as string, { max: 1, timeoutMs: TIMEOUT_MS })
    try {
      let release: () => void = () => {}
      const held = new Promise<void>((resolve) => {
        release = resolve
      })
      const holding = quiet.transaction(() => held)
      // The BEGIN was answered; once a deadline has passed since, nothing was.
      await Bun.sleep(TIMEOUT_MS * 2)
      const refused = await quiet.query('SELECT 1').catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(DatabaseTimeoutError)
      release()
      await holding
    } finally {
      await quiet.close()
    }
  })
  test('a deadline passed while this process itself ran late: overloaded, not an outage', async () => {
    // This process's event loop, as the lag monitor would report it: late the whole time.
    const lagging = { lagSince: (since: number) => performance.now() - since }
    const starved = createPostgresDb(TEST_DATABASE_URL as string, {
      max: 1,
      timeoutMs: TIMEOUT_MS,
      failures: createStoreFailurePolicy({ lag: lagging }),
    })
    try {
      let release: () => void = () => {}
      const held = new Promise<void>((resolve) => {
        release = resolve
      })
      const holding = starved.transaction(() => held)
      await Bun.sleep(TIMEOUT_MS * 2)
      const refused = await starved.query('SELECT 1').catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(StoreOverloadedError)
      expect((refused as Error).message).toBe(
        'this process was too busy to hear the database store in time',
      )
      release()
      await holding
    } finally {
      await starved.close()
    }
  })
})
