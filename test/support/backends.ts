// The storage backends tests run against: the embedded ones always, and the
// real Postgres / Redis when TEST_DATABASE_URL / TEST_REDIS_URL are set. One
// shared database per backend and test process (PGlite's first open is slow),
// in a fresh schema on real Postgres; one random key prefix per Redis cache, so
// runs never collide.
import { randomBytes } from 'node:crypto'
import { createMemoryState, openRedisState, type State } from '../../src/state/state.ts'
import type { Cache } from '../../src/storage/cache.ts'
import type { Db } from '../../src/storage/db.ts'
import { createMemoryCache } from '../../src/storage/memory-cache.ts'
import { type Migration, migrate } from '../../src/storage/migrate.ts'
import { createNearCache, type InvalidationFeed } from '../../src/storage/near-cache.ts'
import { createPgliteDb } from '../../src/storage/pglite.ts'
import { createPostgresDb } from '../../src/storage/postgres.ts'
import { createRedisCache } from '../../src/storage/redis-cache.ts'
import type { RedisConnector } from '../../src/storage/redis-connections.ts'
import { openRedisInvalidations } from '../../src/storage/redis-invalidations.ts'
import { createResilientCache } from '../../src/storage/resilient-cache.ts'
import { clusterConnector, REDIS_DEPLOYMENTS_MISSING, sharedCluster } from './redis-deployments.ts'

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

/** A fresh Postgres schema on TEST_DATABASE_URL, migrated (with `migrations` when given: only those). */
export async function openPostgresSchema(url: string, migrations?: Migration[]): Promise<Db> {
  const schema = uniqueName('test')
  const admin = createPostgresDb(url, { max: 1 })
  await admin.exec(`CREATE SCHEMA ${schema}`)
  // A deadline well above the service's 2 s: the shared test machine can be very busy.
  const db = createPostgresDb(url, { schema, timeoutMs: 15_000 })
  cleanups.push(async () => {
    await db.close()
    await admin.exec(`DROP SCHEMA ${schema} CASCADE`)
    await admin.close()
  })
  await migrate(db, migrations)
  return db
}

/**
 * A fresh, migrated Postgres schema for server processes: the DATABASE_URL
 * that puts them in it, a client of it for the test's own look, and drop()
 * (closes the client, drops the schema).
 */
export async function schemaForServers(url: string, prefix: string) {
  const schema = uniqueName(prefix)
  const admin = createPostgresDb(url, { max: 1 })
  await admin.exec(`CREATE SCHEMA ${schema}`)
  const db = createPostgresDb(url, { schema, max: 2 })
  await migrate(db)
  const databaseUrl = new URL(url)
  databaseUrl.searchParams.set('search_path', `${schema},public`)
  return {
    db,
    databaseUrl: databaseUrl.toString(),
    async drop() {
      await db.close()
      await admin.exec(`DROP SCHEMA ${schema} CASCADE`)
      await admin.close()
    },
  }
}

/** A fresh in-memory PGlite, migrated (with `migrations` when given: only those). */
export async function openPglite(migrations?: Migration[]): Promise<Db> {
  const db = await createPgliteDb()
  cleanups.push(() => db.close())
  await migrate(db, migrations)
  return db
}

/** Real Redis under a key prefix of its own, flushed and closed after all tests. */
function openRedisCache(target: string | RedisConnector): Cache {
  const cache = createRedisCache(target, { keyPrefix: `${uniqueName('test')}:` })
  cleanups.push(async () => {
    await cache.flush()
    await cache.close()
  })
  return cache
}

/** The decorator every real cache of the service sits behind (src/dependencies.ts openCache). */
export const resilient = (cache: Cache) =>
  createResilientCache(cache, { timeoutMs: 500, probeIntervalMs: 200 })

/** feed, and a promise of its first connected() to its listener. */
export function watchConnected(feed: InvalidationFeed) {
  let connected = () => {}
  const firstConnected = new Promise<void>((resolve) => {
    connected = resolve
  })
  const watched: InvalidationFeed = {
    ...feed,
    listen: (listener) =>
      feed.listen({
        ...listener,
        connected() {
          listener.connected()
          connected()
        },
      }),
  }
  return { feed: watched, firstConnected }
}

/**
 * Real Redis under a key prefix of its own behind a near cache that keeps
 * every key near; resolves once the near tier is live.
 */
export async function openNearRedisCache(url: string, maxBytes = 2 ** 20): Promise<Cache> {
  const keyPrefix = `${uniqueName('test')}:`
  const { feed, firstConnected } = watchConnected(
    openRedisInvalidations(url, { prefixes: [''], keyPrefix }),
  )
  const cache = createNearCache(createRedisCache(url, { keyPrefix }), feed, {
    maxBytes,
    isNear: () => true,
  })
  cleanups.push(async () => {
    await cache.flush()
    await cache.close()
  })
  await firstConnected
  return cache
}

/**
 * The storage an app-level suite runs on: one database shared by every suite
 * of the process (so tests use unique ids of their own), and a new cache with
 * keys of its own on each call.
 */
export interface AppBackend {
  name: 'embedded' | 'real'
  db: () => Promise<Db>
  cache: () => Cache
  /**
   * Turn state shared by every app of the process on this backend, as every
   * instance of a deployment shares it with the database.
   */
  state: () => Promise<State>
}

/** Turn logs stay resumable this long in tests (the service's minimum). */
const RETENTION_MS = 600_000

let embeddedDb: Promise<Db> | undefined
let realDb: Promise<Db> | undefined
let embeddedState: Promise<State> | undefined
let realState: Promise<State> | undefined

function sharedState(open: () => Promise<State>): Promise<State> {
  const opened = open()
  cleanups.push(async () => (await opened).close())
  return opened
}

/** In-memory PGlite (opened once per process) and an in-process cache. */
export const embeddedBackend: AppBackend = {
  name: 'embedded',
  db: () => {
    embeddedDb ??= openPglite()
    return embeddedDb
  },
  cache: () => createMemoryCache(),
  state: () => {
    embeddedState ??= sharedState(async () => createMemoryState({ retentionMs: RETENTION_MS }))
    return embeddedState
  },
}

/**
 * Every app backend available here: embedded always, and real Postgres (one
 * fresh schema per process) + Redis when TEST_DATABASE_URL and TEST_REDIS_URL
 * are both set.
 */
export function appBackends(): AppBackend[] {
  const backends = [embeddedBackend]
  const dbUrl = TEST_DATABASE_URL
  const redisUrl = TEST_REDIS_URL
  if (dbUrl && redisUrl)
    backends.push({
      name: 'real',
      db: () => {
        realDb ??= openPostgresSchema(dbUrl)
        return realDb
      },
      cache: () => resilient(openRedisCache(redisUrl)),
      state: () => {
        realState ??= sharedState(() =>
          openRedisState(redisUrl, {
            retentionMs: RETENTION_MS,
            keyPrefix: `${uniqueName('state')}:`,
          }),
        )
        return realState
      },
    })
  return backends
}

export interface Backend<T> {
  name: string
  open: () => Promise<T>
}

/** A database adapter: open() gives a fresh database, migrated (with `migrations` when given: only those). */
export interface DbBackend extends Backend<Db> {
  open: (migrations?: Migration[]) => Promise<Db>
}

/** Every database adapter available here, for the Db contract suite and the migration tests. */
export function dbBackends(): DbBackend[] {
  const backends: DbBackend[] = [{ name: 'pglite', open: openPglite }]
  const url = TEST_DATABASE_URL
  if (url)
    backends.push({ name: 'postgres', open: (migrations) => openPostgresSchema(url, migrations) })
  return backends
}

/**
 * Every cache adapter available here, for the Cache contract suite, each bare
 * and behind the resilient decorator (which must change nothing while the
 * cache is healthy); and the Redis adapter on a private Redis Cluster where
 * redis-server is installed.
 */
export function cacheBackends(): Backend<Cache>[] {
  const backends: Backend<Cache>[] = [
    { name: 'memory', open: async () => createMemoryCache() },
    { name: 'resilient(memory)', open: async () => resilient(createMemoryCache()) },
  ]
  const url = TEST_REDIS_URL
  if (url)
    backends.push(
      { name: 'redis', open: async () => openRedisCache(url) },
      { name: 'resilient(redis)', open: async () => resilient(openRedisCache(url)) },
      { name: 'redis+near', open: () => openNearRedisCache(url) },
    )
  if (!REDIS_DEPLOYMENTS_MISSING)
    backends.push({
      name: 'redis cluster',
      open: async () => openRedisCache(clusterConnector(await sharedCluster())),
    })
  return backends
}
