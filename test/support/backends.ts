// The storage backends tests run against: the embedded ones always, and the
// real Postgres / Redis when TEST_DATABASE_URL / TEST_REDIS_URL are set. One
// database per test process (PGlite's first open is slow), in a fresh schema on
// real Postgres; one random key prefix per cache, so runs never collide.
import { randomBytes } from 'node:crypto'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db } from '../../src/storage/db.ts'
import { createMemoryCache } from '../../src/storage/memory-cache.ts'
import { migrate } from '../../src/storage/migrate.ts'
import { createPgliteDb } from '../../src/storage/pglite.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { createRedisCache } from '../../src/storage/redis-cache.ts'

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL || undefined
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL || undefined

const cleanups: (() => Promise<void>)[] = []

/** Runs every registered cleanup; called once by the preload after all tests. */
export async function cleanupBackends() {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {})
}

export function uniqueName(prefix: string): string {
  return `${prefix}_${process.pid}_${randomBytes(4).toString('hex')}`
}

/** A fresh, migrated Postgres schema on TEST_DATABASE_URL. */
export async function openPostgresSchema(url: string): Promise<Db> {
  const schema = uniqueName('test')
  const admin = createPostgresDb(url, { max: 1 })
  await admin.exec(`CREATE SCHEMA ${schema}`)
  const db = createPostgresDb(url, { schema })
  cleanups.push(async () => {
    await db.close()
    await admin.exec(`DROP SCHEMA ${schema} CASCADE`)
    await admin.close()
  })
  await migrate(db)
  return db
}

/** A fresh, migrated in-memory PGlite. */
export async function openPglite(): Promise<Db> {
  const db = await createPgliteDb()
  cleanups.push(() => db.close())
  await migrate(db)
  return db
}

let shared: Promise<Db> | undefined

/**
 * The process-wide test database: real Postgres when TEST_DATABASE_URL is set,
 * else in-memory PGlite. Tests share it, so they use unique ids of their own.
 */
export function testDb(): Promise<Db> {
  shared ??= TEST_DATABASE_URL ? openPostgresSchema(TEST_DATABASE_URL) : openPglite()
  return shared
}

/** A cache with its own key prefix: real Redis when TEST_REDIS_URL is set, else in-process. */
export function testCache(): Cache {
  if (!TEST_REDIS_URL) return createMemoryCache()
  const cache = createRedisCache(TEST_REDIS_URL, { keyPrefix: `${uniqueName('test')}:` })
  cleanups.push(async () => {
    await cache.flush()
    await cache.close()
  })
  return cache
}

export interface Backend<T> {
  name: string
  open: () => Promise<T>
}

/** Every database adapter available here, for the Db contract suite. */
export function dbBackends(): Backend<Db>[] {
  const backends: Backend<Db>[] = [{ name: 'pglite', open: openPglite }]
  const url = TEST_DATABASE_URL
  if (url) backends.push({ name: 'postgres', open: () => openPostgresSchema(url) })
  return backends
}

/** Every cache adapter available here, for the Cache contract suite. */
export function cacheBackends(): Backend<Cache>[] {
  const backends: Backend<Cache>[] = [{ name: 'memory', open: async () => createMemoryCache() }]
  const url = TEST_REDIS_URL
  if (url)
    backends.push({
      name: 'redis',
      open: async () => {
        const cache = createRedisCache(url, { keyPrefix: `${uniqueName('test')}:` })
        cleanups.push(async () => {
          await cache.flush()
          await cache.close()
        })
        return cache
      },
    })
  return backends
}
